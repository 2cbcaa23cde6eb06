//! The TypeScript declarations of every value the package takes or returns that has a Rust type,
//! generated from those types (ts-rs, derived under `cfg(test)` only) into `generated.d.ts`,
//! which the wasm's declarations include. `types.d.ts` holds what has no Rust type: the
//! providers' message shapes and the overloads.
//!
//! `cargo test` fails when the committed file differs from what the types generate;
//! `UPDATE_TYPES=1 cargo test --lib typescript` rewrites it.

use ts_rs::{Config, TS};

use crate::compact::cost::{CostEstimate, PricingOptions};
use crate::compact::options::RequestParts;
use crate::compact::profile::Profile;
use crate::compact::receipt::CacheUse;
use crate::compact::reduce::compress::TextMode;
use crate::compact::request::hints::{CacheOptions, CacheTtl};
use crate::compact::spec::{BudgetPatch, BuildSpec, CompressPatch, DigestPatch, SummaryPatch};
use crate::compact::{
    Action, BridgeUse, BudgetReport, DropReason, MemoryOptions, MemoryUse, PendingSummary, PinRole, PinUse, Receipt,
    ReceiptEntry, ReceiptRun, Repair, RepairKind, Section, Summarizer, SummaryPlacement, SummaryRecord, SummaryRequest,
    SummarySource, SummaryState, SummaryUse, TokensByPart, Violation,
};
use crate::compact::{Change, EventReason, FrameState, FrozenFates, FrozenMessage, FrozenReceipt};
use crate::compact::{ImagePlaceholder, ImagesUse, StateOptions, StatePart, StateSectionUse, StateUse};
use crate::history::{LoggedMessage, TokenReport};
use crate::memory::recall::{RecallHit, RecallResult, RecalledMessage, RecalledTurn, SearchHit};
use crate::memory::search::DocumentKind;
use crate::memory::{ContextSnapshot, MemoryExport, MemorySummary, MessageRange};
use crate::message::Format;
use crate::session::records::{Changes, PullPlan, PullReport, Renumbered, SessionInfo, StoredRecord};
use crate::session::{
    HistoryExport, HistoryOptions, MemoryChoice, MemorySettings, SessionExport, SessionOptions, SubagentResult,
    TurnInput, TurnSummaryRequest,
};
use crate::state::{
    AgentState, AppState, Artifact, ArtifactInput, LanguageFallback, SavedArtifact, Todo, TodoStatus, UploadedFile,
};
use crate::tokens::anchor::{AnchorEnd, AnchoredCount, CountBasis, UsageReport};
use crate::tokens::calibration::{Calibrated, Factor};
use crate::tokens::{ChatCount, RequestCount};

use crate::load::{LoadOptions, Loaded, Mark, MarkKind, Origin, RunInfo, Skipped, Source};

use super::history::{AppendOneOptions, AppendOptions, BuildResult, RecordUsageOptions};
use super::interning::LayoutEntry;
use super::records::ChangesOptions;
use super::tokenizer::CountOptions;
use crate::history::{AppendRepair, RepairedAppend};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/bindings/generated.d.ts");

fn declarations() -> String {
    // JS numbers: the counts never come near 2^53.
    let cfg = Config::new().with_large_int("number");
    let decls = [
        // Shared names.
        Format::decl(&cfg),
        // Counting.
        CountOptions::decl(&cfg),
        ChatCount::decl(&cfg),
        RequestCount::decl(&cfg),
        TokenReport::decl(&cfg),
        RecordUsageOptions::decl(&cfg),
        UsageReport::decl(&cfg),
        CountBasis::decl(&cfg),
        AnchoredCount::decl(&cfg),
        AnchorEnd::decl(&cfg),
        // Appending.
        AppendOptions::decl(&cfg),
        AppendOneOptions::decl(&cfg),
        RepairedAppend::decl(&cfg),
        AppendRepair::decl(&cfg),
        Factor::decl(&cfg),
        Calibrated::decl(&cfg),
        // Conversation files.
        LoadOptions::decl(&cfg),
        Loaded::decl(&cfg),
        Source::decl(&cfg),
        Origin::decl(&cfg),
        Skipped::decl(&cfg),
        Mark::decl(&cfg),
        MarkKind::decl(&cfg),
        RunInfo::decl(&cfg),
        HistoryOptions::decl(&cfg),
        // Build options.
        BuildSpec::decl(&cfg),
        BudgetPatch::decl(&cfg),
        CompressPatch::decl(&cfg),
        TextMode::decl(&cfg),
        DigestPatch::decl(&cfg),
        SummaryPatch::decl(&cfg),
        Summarizer::decl(&cfg),
        SummaryPlacement::decl(&cfg),
        MemoryOptions::decl(&cfg),
        StateOptions::decl(&cfg),
        RequestParts::decl(&cfg),
        CacheOptions::decl(&cfg),
        CacheTtl::decl(&cfg),
        Profile::decl(&cfg),
        // Build results.
        BuildResult::decl(&cfg),
        LayoutEntry::decl(&cfg),
        Section::decl(&cfg),
        Action::decl(&cfg),
        DropReason::decl(&cfg),
        TokensByPart::decl(&cfg),
        Receipt::decl(&cfg),
        ReceiptRun::decl(&cfg),
        ReceiptEntry::decl(&cfg),
        BudgetReport::decl(&cfg),
        CacheUse::decl(&cfg),
        CostEstimate::decl(&cfg),
        PricingOptions::decl(&cfg),
        EventReason::decl(&cfg),
        Change::decl(&cfg),
        Repair::decl(&cfg),
        RepairKind::decl(&cfg),
        SummaryUse::decl(&cfg),
        PinUse::decl(&cfg),
        PinRole::decl(&cfg),
        BridgeUse::decl(&cfg),
        MemoryUse::decl(&cfg),
        StatePart::decl(&cfg),
        StateSectionUse::decl(&cfg),
        StateUse::decl(&cfg),
        ImagePlaceholder::decl(&cfg),
        ImagesUse::decl(&cfg),
        SummaryRequest::decl(&cfg),
        SummaryRecord::decl(&cfg),
        SummarySource::decl(&cfg),
        SummaryState::decl(&cfg),
        PendingSummary::decl(&cfg),
        Violation::decl(&cfg),
        // Sessions and memory.
        SessionOptions::decl(&cfg),
        MemoryChoice::decl(&cfg),
        MemorySettings::decl(&cfg),
        ContextSnapshot::decl(&cfg),
        MessageRange::decl(&cfg),
        MemorySummary::decl(&cfg),
        TurnInput::decl(&cfg),
        TurnSummaryRequest::decl(&cfg),
        SearchHit::decl(&cfg),
        DocumentKind::decl(&cfg),
        RecallResult::decl(&cfg),
        RecalledTurn::decl(&cfg),
        RecalledMessage::decl(&cfg),
        RecallHit::decl(&cfg),
        SubagentResult::decl(&cfg),
        // Artifacts and agent state.
        Artifact::decl(&cfg),
        ArtifactInput::decl(&cfg),
        LanguageFallback::decl(&cfg),
        SavedArtifact::decl(&cfg),
        TodoStatus::decl(&cfg),
        Todo::decl(&cfg),
        UploadedFile::decl(&cfg),
        AgentState::decl(&cfg),
        AppState::decl(&cfg),
        MemoryExport::decl(&cfg),
        SessionExport::decl(&cfg),
        HistoryExport::decl(&cfg),
        FrameState::decl(&cfg),
        FrozenMessage::decl(&cfg),
        FrozenFates::decl(&cfg),
        FrozenReceipt::decl(&cfg),
        LoggedMessage::decl(&cfg),
        // Stored sessions.
        StoredRecord::decl(&cfg),
        Changes::decl(&cfg),
        ChangesOptions::decl(&cfg),
        PullPlan::decl(&cfg),
        PullReport::decl(&cfg),
        Renumbered::decl(&cfg),
        SessionInfo::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from the Rust types by src/bindings/typescript.rs (ts-rs): do not edit.\n\
         // `UPDATE_TYPES=1 cargo test --lib typescript` rewrites it.\n",
    );
    for decl in decls {
        out.push('\n');
        // ts-rs puts the doc comment first: `export` goes before the `type` keyword.
        match decl.find("type ") {
            Some(at) if decl[..at].trim().is_empty() || decl[..at].trim_end().ends_with("*/") => {
                out.push_str(&decl[..at]);
                out.push_str("export ");
                out.push_str(&decl[at..]);
            }
            _ => out.push_str(&decl),
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_declarations_are_generated_from_the_rust_types() {
    let generated = declarations();
    if std::env::var_os("UPDATE_TYPES").is_some() {
        std::fs::write(FILE, &generated).expect("write generated.d.ts");
        return;
    }
    let committed = std::fs::read_to_string(FILE).unwrap_or_default();
    assert!(
        committed == generated,
        "src/bindings/generated.d.ts is not what the Rust types generate: run `UPDATE_TYPES=1 cargo test --lib typescript`"
    );
}
