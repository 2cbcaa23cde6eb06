//! `Session`'s stored form for JS (the session store in `js/store.ts` is its caller): the
//! records of what changed since the last save, loading from records, catching up with another
//! writer, and the title and creation time the store lists. Records cross the boundary once
//! per call; their values are read as strings, without a JSON round trip.

use js_sys::{Array, Reflect};
use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::conversion::{js_string, options, to_js};
use super::errors::JsResult;
use super::session::{Session, Shared};
use crate::error::{Error, Result};
use crate::session::records::{self, SessionInfo, StoredRecord};
use crate::session::Session as CoreSession;

/// `changes`' options.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub(crate) struct ChangesOptions {
    /// The time of this save, in milliseconds since the Unix epoch (default `Date.now()`).
    now: Option<f64>,
}

fn record_at(value: &JsValue, what: &str) -> Result<StoredRecord> {
    let field = |name: &str| Reflect::get(value, &JsValue::from_str(name)).ok().filter(|v| !v.is_undefined());
    if !value.is_object() {
        return Err(Error::invalid_argument(format!("{what} must be a {{ key, value }} object")));
    }
    let key = field("key")
        .filter(Array::is_array)
        .ok_or_else(|| Error::invalid_argument(format!("{what}.key must be an array of strings")))?;
    let key = Array::from(&key)
        .iter()
        .enumerate()
        .map(|(i, segment)| {
            segment.as_string().ok_or_else(|| Error::invalid_argument(format!("{what}.key[{i}] must be a string")))
        })
        .collect::<Result<Vec<_>>>()?;
    let value = match field("value") {
        Some(value) => js_string(&value, &format!("{what}.value"))?,
        None => None,
    }
    .ok_or_else(|| Error::invalid_argument(format!("{what}.value must be a string")))?;
    Ok(StoredRecord { key, value })
}

fn records_arg(value: &JsValue) -> Result<Vec<StoredRecord>> {
    if !Array::is_array(value) {
        return Err(Error::invalid_argument("records must be an array of { key, value } objects"));
    }
    Array::from(value).iter().enumerate().map(|(i, record)| record_at(&record, &format!("records[{i}]"))).collect()
}

fn time(value: f64, what: &str) -> Result<u64> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= 9_007_199_254_740_991.0 {
        Ok(value as u64)
    } else {
        Err(Error::invalid_argument(format!("{what} must be a whole number of milliseconds since 1970, got {value}")))
    }
}

#[wasm_bindgen]
impl Session {
    /// A session from its stored records (what `changes()` wrote), checked whole first: a record
    /// that fails its checksum or is missing throws a `CorruptRecordError` naming its key, one of
    /// a newer version an `InvalidArgumentError`; nothing is loaded. A single record holding a
    /// whole `export()` document (the layout before records) is migrated.
    #[wasm_bindgen(js_name = load)]
    pub fn load(#[wasm_bindgen(unchecked_param_type = "StoredRecord[]")] records: JsValue) -> JsResult<Session> {
        let records = records_arg(&records)?;
        Ok(Session { shared: Shared::new(CoreSession::load(&records)?) })
    }

    /// What a list of sessions shows of a stored session: its meta record (key `["s", id]`) and
    /// the records of its tail (those of `tailKeys(meta)` up to the first absent), with its
    /// settings record (`settingsKey(meta)`) for its `encoding`, checked.
    #[wasm_bindgen(js_name = info, unchecked_return_type = "SessionInfo")]
    pub fn info(
        #[wasm_bindgen(unchecked_param_type = "StoredRecord")] record: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "StoredRecord[]")] tail: JsValue,
    ) -> JsResult<JsValue> {
        let mut records = if tail.is_undefined() { Vec::new() } else { records_arg(&tail)? };
        records.push(record_at(&record, "the record")?);
        Ok(to_js(&SessionInfo::read(&records)?)?)
    }

    /// The keys of the records a tail after this meta record may hold, in order (see `info`).
    #[wasm_bindgen(js_name = tailKeys, unchecked_return_type = "string[][]")]
    pub fn tail_keys(#[wasm_bindgen(unchecked_param_type = "StoredRecord")] meta: JsValue) -> JsResult<JsValue> {
        let keys = records::tail_keys(&record_at(&meta, "the meta record")?)?;
        Ok(keys.into_iter().map(|key| key.into_iter().map(JsValue::from).collect::<Array>()).collect::<Array>().into())
    }

    /// The key of the settings record this meta record names (`undefined` if none): given to
    /// `info` with the tail, the session's `encoding` is listed too.
    #[wasm_bindgen(js_name = settingsKey, unchecked_return_type = "string[] | undefined")]
    pub fn settings_key(#[wasm_bindgen(unchecked_param_type = "StoredRecord")] meta: JsValue) -> JsResult<JsValue> {
        let key = records::settings_key(&record_at(&meta, "the meta record")?)?;
        Ok(key.map_or(JsValue::UNDEFINED, |key| key.into_iter().map(JsValue::from).collect::<Array>().into()))
    }

    /// The records of what changed since the last save, in the order to write them (the meta
    /// record, the commit, last; an append's tail save writes message records alone, each
    /// carrying the commit), and the keys to remove once they are written. Nothing is marked
    /// saved until `markSaved(commit)`: after a failed write the same records come out again.
    #[wasm_bindgen(unchecked_return_type = "SessionChanges")]
    pub fn changes(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ChangesOptions")] options_arg: JsValue,
    ) -> JsResult<JsValue> {
        let ChangesOptions { now } = options(&options_arg, "changes options")?;
        let now = time(now.unwrap_or_else(js_sys::Date::now).floor(), "changes options.now")?;
        Ok(to_js(&self.shared.get()?.changes(now)?)?)
    }

    /// Confirms that the records of the `changes()` call that made `commit` are stored.
    #[wasm_bindgen(js_name = markSaved)]
    pub fn mark_saved(&self, commit: f64) -> JsResult<()> {
        let commit = time(commit, "the commit")?;
        Ok(self.shared.get()?.mark_saved(commit)?)
    }

    /// The commit of the last save or load (0 before the first).
    #[wasm_bindgen(getter, js_name = savedCommit)]
    pub fn saved_commit(&self) -> JsResult<f64> {
        Ok(self.shared.get()?.saved_commit() as f64)
    }

    /// What to read to catch up with `meta`, this session's meta record as storage holds it now.
    #[wasm_bindgen(js_name = pullPlan, unchecked_return_type = "PullPlan")]
    pub fn pull_plan(&self, #[wasm_bindgen(unchecked_param_type = "StoredRecord")] meta: JsValue) -> JsResult<JsValue> {
        let meta = record_at(&meta, "the meta record")?;
        Ok(to_js(&self.shared.get()?.pull_plan(&meta)?)?)
    }

    /// Applies another writer's saves (the meta record, what `pullPlan` named and the records of
    /// its `tail` up to the first absent); this session's
    /// unsaved messages and turns follow theirs. On error nothing changes.
    #[wasm_bindgen(unchecked_return_type = "PullReport")]
    pub fn pull(&self, #[wasm_bindgen(unchecked_param_type = "StoredRecord[]")] records: JsValue) -> JsResult<JsValue> {
        let records = records_arg(&records)?;
        Ok(to_js(&self.shared.get()?.pull(&records)?)?)
    }

    /// A one-line title (what a list of sessions shows), or `undefined`.
    #[wasm_bindgen(getter)]
    pub fn title(&self) -> JsResult<Option<String>> {
        Ok(self.shared.get()?.title().map(str::to_string))
    }

    #[wasm_bindgen(setter)]
    pub fn set_title(&self, title: JsValue) -> JsResult<()> {
        let title = if title.is_undefined() || title.is_null() {
            None
        } else {
            Some(title.as_string().ok_or_else(|| Error::invalid_argument("a title must be a string"))?)
        };
        Ok(self.shared.get()?.set_title(title)?)
    }

    /// When the session was first saved (milliseconds since the Unix epoch), or `undefined`.
    #[wasm_bindgen(getter, js_name = createdAt)]
    pub fn created_at(&self) -> JsResult<Option<f64>> {
        Ok(self.shared.get()?.created_at().map(|t| t as f64))
    }
}
