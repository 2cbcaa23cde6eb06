mod common;

use context_compactor::message::{self, Format};
use context_compactor::tokens::{self, Encoding, RequestOptions};
use serde_json::{json, Value};

#[test]
fn every_cl100k_and_o200k_vector_matches_id_for_id() {
    let plans = common::token_vectors();
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
    assert_eq!(checked, [50, 50]);
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
    for run in common::airline_runs().iter().take(20) {
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

/// tests/data/openai-prompt-tokens.json: requests with the prompt tokens the OpenAI API reported
/// for them (each vector names its source; see the file's `sources`).
fn api_vectors() -> Vec<(String, Value, usize)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openai-prompt-tokens.json");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    data["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["source"].as_str().unwrap().to_string(),
                v["request"].clone(),
                v["prompt_tokens"].as_u64().unwrap() as usize,
            )
        })
        .collect()
}

#[test]
fn every_api_reported_prompt_count_is_matched_exactly() {
    let vectors = api_vectors();
    assert_eq!(vectors.len(), 38);
    for (i, (source, request, expected)) in vectors.iter().enumerate() {
        let count = tokens::count_request(Encoding::Cl100kBase, request.clone(), &RequestOptions::default()).unwrap();
        assert_eq!(count.total, *expected, "vector {i} ({source}): {request}");
        assert!(!count.estimate, "vector {i}: {:?}", count.estimates);
        assert_eq!(count.total, count.system + count.messages + count.tools + count.tool_choice + count.reply_priming);
    }
}

#[test]
fn legacy_functions_and_tools_are_one_namespace() {
    // Definitions sent as `tools` render exactly as the same ones sent as `functions`.
    for (_, request, _) in api_vectors().into_iter().filter(|(_, r, _)| r.get("functions").is_some()) {
        let mut as_tools = request.clone();
        let functions = as_tools.as_object_mut().unwrap().remove("functions").unwrap();
        let tools: Vec<Value> =
            functions.as_array().unwrap().iter().map(|f| json!({"type": "function", "function": f})).collect();
        as_tools["tools"] = Value::from(tools);
        let count = |r: &Value| {
            tokens::count_request(Encoding::O200kBase, r.clone(), &RequestOptions::default()).unwrap().total
        };
        assert_eq!(count(&request), count(&as_tools));
    }
}

#[test]
fn the_cookbook_tool_example_counts_through_the_request_call_too() {
    let cookbook = common::read_json("tokens/openai-cookbook-chat-token-counts.json");
    let example = &cookbook["tools_example"];
    let request = json!({"messages": example["messages"], "tools": example["tools"]});
    for (encoding, model) in [(Encoding::O200kBase, "gpt-4o"), (Encoding::Cl100kBase, "gpt-4")] {
        let count = tokens::count_request(encoding, request.clone(), &RequestOptions::default()).unwrap();
        assert_eq!(count.total as u64, example["expected_prompt_tokens"][model].as_u64().unwrap(), "{model}");
    }
}
