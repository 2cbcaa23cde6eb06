mod common;

use context_compactor::message::{self, Format};
use context_compactor::tokens::{self, Encoding};
use serde_json::Value;

#[test]
fn every_cl100k_and_o200k_vector_matches_id_for_id() {
    let plans = common::test_plans();
    let mut checked = [0, 0];
    for (name, sample, ids) in &plans {
        let (encoding, slot) = match name.as_str() {
            "cl100k_base" => (Encoding::Cl100kBase, 0),
            "o200k_base" => (Encoding::O200kBase, 1),
            _ => continue,
        };
        assert_eq!(&encoding.encode(sample).unwrap(), ids, "{name}: {sample:?}");
        assert_eq!(encoding.count(sample), ids.len());
        checked[slot] += 1;
    }
    assert_eq!(checked, [64, 57]);
}

#[test]
fn cookbook_encoding_vectors_match() {
    let cookbook = common::read_json("tokens/openai-cookbook-chat-token-counts.json");
    let mut checked = 0;
    for vector in cookbook["encoding_vectors"].as_array().unwrap() {
        let encoding = match Encoding::parse(vector["encoding"].as_str().unwrap()) {
            Ok(encoding) => encoding,
            Err(_) => continue, // r50k and p50k are not shipped
        };
        let ids: Vec<u32> = serde_json::from_value(vector["ids"].clone()).unwrap();
        assert_eq!(encoding.encode(vector["text"].as_str().unwrap()).unwrap(), ids);
        checked += 1;
    }
    assert_eq!(checked, 8);
}

#[test]
fn cookbook_chat_counts_are_reproduced() {
    let cookbook = common::read_json("tokens/openai-cookbook-chat-token-counts.json");
    let messages = message::parse(cookbook["chat_example_messages"].clone(), Format::OpenAi).unwrap();
    let expected = &cookbook["chat_expected_prompt_tokens"]["current_notebook"];
    for (encoding, model) in [(Encoding::O200kBase, "gpt-4o"), (Encoding::Cl100kBase, "gpt-4")] {
        let count = tokens::count_messages(encoding, &messages, None).unwrap();
        assert_eq!(count.total as u64, expected[model].as_u64().unwrap(), "{model}");
    }
    assert_eq!(expected["gpt-4o"], 124);
    assert_eq!(expected["gpt-4"], 129);

    let example = &cookbook["tools_example"];
    let messages = message::parse(example["messages"].clone(), Format::OpenAi).unwrap();
    for (encoding, model, want) in [(Encoding::O200kBase, "gpt-4o", 101), (Encoding::Cl100kBase, "gpt-4", 105)] {
        let count = tokens::count_messages(encoding, &messages, Some(&example["tools"])).unwrap();
        assert_eq!(count.total, want, "{model} with tools");
        assert_eq!(example["expected_prompt_tokens"][model], want);
    }
}

#[test]
fn anthropic_tool_definitions_count_like_openai_ones() {
    let cookbook = common::read_json("tokens/openai-cookbook-chat-token-counts.json");
    let function = &cookbook["tools_example"]["tools"][0]["function"];
    let anthropic = serde_json::json!([{
        "name": function["name"], "description": function["description"], "input_schema": function["parameters"]
    }]);
    assert_eq!(
        tokens::count_tools(Encoding::O200kBase, &anthropic).unwrap(),
        tokens::count_tools(Encoding::O200kBase, &cookbook["tools_example"]["tools"]).unwrap()
    );
    assert!(tokens::count_tools(Encoding::O200kBase, &Value::from("nope")).is_err());
}

#[test]
fn every_fixture_message_counts_its_strings() {
    // A text message's count is its framing plus its text, exactly.
    for run in common::tau_bench().iter().take(20) {
        let parsed = message::parse(run.clone(), Format::OpenAi).unwrap();
        for (message, raw) in parsed.iter().zip(run.as_array().unwrap()) {
            let counted = tokens::count_message(Encoding::O200kBase, message);
            if let (Some(text), None) = (raw["content"].as_str(), raw.get("tool_calls")) {
                let mut expected =
                    3 + Encoding::O200kBase.count(raw["role"].as_str().unwrap()) + Encoding::O200kBase.count(text);
                if let Some(name) = raw["name"].as_str() {
                    expected += Encoding::O200kBase.count(name) + 1;
                }
                assert_eq!(counted.total as usize, expected);
            }
        }
    }
}
