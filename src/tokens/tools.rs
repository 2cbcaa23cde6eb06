//! Tool definitions as the providers bill them.
//!
//! OpenAI does not show the model the JSON schemas of `tools` or legacy `functions`: it renders
//! them as a TypeScript-like namespace appended to the system message, and bills that text. The
//! rendering below is the one public counters reverse-engineered and checked against the
//! prompt tokens the API reported (hmarr/openai-chat-tokens, the OpenAI community forum thread
//! "How to calculate the tokens when using function call"; tests/data/openai-prompt-tokens.json
//! lists every figure with its source):
//!
//! ```text
//! namespace functions {
//!
//! // Get the current weather in a given location
//! type get_current_weather = (_: {
//! // The city and state, e.g. San Francisco, CA
//! location: string,
//! unit?: "celsius" | "fahrenheit", // default: "celsius"
//! }) => any;
//!
//! } // namespace functions
//! ```
//!
//! Properties keep the order they were given in (serde_json's `preserve_order`: the order
//! changes how the lines' ends merge into tokens). Descriptions and defaults are comments of the
//! top-level properties only (nested ones are
//! not shown to the model: the API-reported counts of nested definitions say so), `?` marks a
//! property not in `required`, enums are unions of their JSON literals, arrays `T[]`, nested
//! objects `{…}` indented by two, `anyOf`/`oneOf` unions, `const` is not shown.
//!
//! Anthropic renders tools its own way (not public); its documented tool-use system prompt is
//! counted per model, the definitions as their JSON, and the result is an estimate.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::Encoding;
use crate::error::{Error, Result};
use crate::message::json::type_name;

/// The namespace's own framing when it opens a system message of its own: the count of the
/// rendered text plus 9 (API-reported: hmarr/openai-chat-tokens' vectors, the cookbook's 101/105).
const NAMESPACE_OVERHEAD: usize = 9;
/// Appended to an existing system message instead, the namespace saves that message's framing.
const SHARED_SYSTEM_SAVING: usize = 4;
/// `function_call: {name}` / `tool_choice: {function: {name}}`: the name plus 4.
const FORCED_CALL_OVERHEAD: usize = 4;
/// `function_call: "none"` / `tool_choice: "none"`.
const NONE_CHOICE: usize = 1;
/// Schemas nested deeper than this render as `any` (a hostile schema cannot exhaust the stack)…
const MAX_SCHEMA_DEPTH: usize = 32;
/// …and a function renders at most this many schemas (self-referencing `$ref`s cannot multiply).
const MAX_SCHEMA_NODES: usize = 20_000;

/// One function as OpenAI shows it to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef<'a> {
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub parameters: Option<&'a Value>,
}

/// A `tools` or `functions` list, split into the functions OpenAI renders and the tools it does
/// not (custom and built-in tool types), which are counted as their JSON and make the count an estimate.
#[derive(Clone, Debug, Default)]
pub struct ToolList<'a> {
    pub functions: Vec<FunctionDef<'a>>,
    pub unrendered: Vec<&'a Value>,
}

impl<'a> ToolList<'a> {
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty() && self.unrendered.is_empty()
    }

    /// Reads `tools` (`{type: "function", function: {…}}`, also Anthropic's `{name, input_schema}`
    /// and bare `{name, parameters}`) or legacy `functions` (`{name, description, parameters}`).
    /// `what` names the list in errors (`tools`, `functions`).
    pub fn read(value: &'a Value, what: &str, into: &mut ToolList<'a>) -> Result<()> {
        let Value::Array(items) = value else {
            return Err(Error::invalid_argument(format!(
                "`{what}` must be an array of tool definitions, got {}",
                type_name(value)
            )));
        };
        for (i, item) in items.iter().enumerate() {
            let Value::Object(tool) = item else {
                return Err(Error::invalid_argument(format!("{what}[{i}] must be an object, got {}", type_name(item))));
            };
            let (function, path) = match (tool.get("function"), tool.get("type").and_then(Value::as_str)) {
                (Some(Value::Object(function)), _) => (function, format!("{what}[{i}].function")),
                (Some(other), _) => {
                    return Err(Error::invalid_argument(format!(
                        "{what}[{i}].function must be an object, got {}",
                        type_name(other)
                    )))
                }
                // `{type: "custom", …}`, built-in tools: not rendered as functions.
                (None, Some(kind)) if kind != "function" && !tool.contains_key("input_schema") => {
                    into.unrendered.push(item);
                    continue;
                }
                (None, _) => (tool, format!("{what}[{i}]")),
            };
            into.functions.push(function_def(function, &path)?);
        }
        Ok(())
    }
}

fn function_def<'a>(function: &'a Map<String, Value>, path: &str) -> Result<FunctionDef<'a>> {
    let name = match function.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.as_str(),
        Some(Value::String(_)) => return Err(Error::invalid_argument(format!("{path}.name is empty"))),
        Some(other) => {
            return Err(Error::invalid_argument(format!("{path}.name must be a string, got {}", type_name(other))))
        }
        None => return Err(Error::invalid_argument(format!("{path} has no function name"))),
    };
    let description = match function.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        Some(other) => {
            return Err(Error::invalid_argument(format!(
                "{path}.description must be a string, got {}",
                type_name(other)
            )))
        }
    };
    let parameters = function.get("parameters").or_else(|| function.get("input_schema")).filter(|p| !p.is_null());
    Ok(FunctionDef { name, description, parameters })
}

/// The namespace text OpenAI bills for these functions.
pub fn render_functions(functions: &[FunctionDef]) -> String {
    let mut out = String::from("namespace functions {\n\n");
    for function in functions {
        if let Some(description) = function.description.filter(|d| !d.is_empty()) {
            for line in description.lines() {
                let _ = writeln!(out, "// {line}");
            }
        }
        let root = function.parameters.unwrap_or(&Value::Null);
        match root.get("properties").and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => {
                let _ = writeln!(out, "type {} = (_: {{", function.name);
                let mut renderer = Renderer { out, root, nodes_left: MAX_SCHEMA_NODES, nesting: 0 };
                renderer.properties(root, properties, 0);
                out = renderer.out;
                out.push_str("}) => any;\n\n");
            }
            _ => {
                let _ = writeln!(out, "type {} = () => any;\n", function.name);
            }
        }
    }
    out.push_str("} // namespace functions");
    out
}

/// Renders one function's parameters. `root` is the parameters schema (for `$ref`s); every
/// schema rendered spends one of `nodes_left`, so that `$ref`s cannot multiply without end, and
/// `nesting` counts the schemas being rendered (`depth` is only the indentation of objects).
struct Renderer<'a> {
    out: String,
    root: &'a Value,
    nodes_left: usize,
    nesting: usize,
}

impl Renderer<'_> {
    /// One line per property (`name?: type,`), each ending in a newline; nested objects indent
    /// by two and lose their comments.
    fn properties(&mut self, object: &Value, properties: &Map<String, Value>, depth: usize) {
        let indent = "  ".repeat(depth);
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in properties {
            let top_level = depth == 0;
            if top_level {
                if let Some(description) = property.get("description").and_then(Value::as_str).filter(|d| !d.is_empty())
                {
                    let _ = writeln!(self.out, "{indent}// {description}");
                }
            }
            let optional = if required.contains(&name.as_str()) { "" } else { "?" };
            let _ = write!(self.out, "{indent}{name}{optional}: ");
            self.schema(property, depth);
            self.out.push(',');
            if top_level {
                if let Some(default) = property.get("default") {
                    self.out.push_str(" // default: ");
                    self.out.push_str(&crate::util::json_text::value_text(default));
                }
            }
            self.out.push('\n');
        }
    }

    fn schema(&mut self, schema: &Value, depth: usize) {
        let Some(object) = schema.as_object().filter(|_| self.nesting < MAX_SCHEMA_DEPTH && self.nodes_left > 0) else {
            self.out.push_str("any");
            return;
        };
        self.nodes_left -= 1;
        self.nesting += 1;
        self.object_schema(object, schema, depth);
        self.nesting -= 1;
    }

    fn object_schema(&mut self, object: &Map<String, Value>, schema: &Value, depth: usize) {
        if let Some(target) = object.get("$ref").and_then(Value::as_str) {
            match resolve_ref(self.root, target) {
                Some(resolved) => self.schema(resolved, depth),
                None => self.out.push_str("any"),
            }
            return;
        }
        for (key, separator) in [("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")] {
            if let Some(variants) = object.get(key).and_then(Value::as_array).filter(|v| !v.is_empty()) {
                for (i, variant) in variants.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(separator);
                    }
                    self.schema(variant, depth);
                }
                return;
            }
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array).filter(|v| !v.is_empty()) {
            for (i, value) in values.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(" | ");
                }
                self.out.push_str(&crate::util::json_text::value_text(value));
            }
            return;
        }
        match object.get("type") {
            Some(Value::String(kind)) => self.named_type(kind, schema, depth),
            Some(Value::Array(kinds)) if !kinds.is_empty() => {
                for (i, kind) in kinds.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(" | ");
                    }
                    match kind.as_str() {
                        Some(kind) => self.named_type(kind, schema, depth),
                        None => self.out.push_str("any"),
                    }
                }
            }
            _ => self.out.push_str("any"),
        }
    }

    fn named_type(&mut self, kind: &str, schema: &Value, depth: usize) {
        match kind {
            "string" | "boolean" | "null" => self.out.push_str(kind),
            "number" | "integer" => self.out.push_str("number"),
            "object" => match schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty()) {
                Some(properties) => {
                    self.out.push_str("{\n");
                    self.properties(schema, properties, depth + 1);
                    self.out.push('}');
                }
                None => self.out.push_str("object"),
            },
            "array" => match schema.get("items") {
                Some(items) => {
                    self.schema(items, depth);
                    self.out.push_str("[]");
                }
                None => self.out.push_str("any[]"),
            },
            _ => self.out.push_str("any"),
        }
    }
}

/// `#/$defs/Name`, `#/definitions/Name` or any `#/…` JSON pointer into the root schema.
fn resolve_ref<'a>(root: &'a Value, target: &str) -> Option<&'a Value> {
    root.pointer(target.strip_prefix('#')?)
}

/// What a `tools`/`functions` list costs in an OpenAI request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolTokens {
    pub tokens: usize,
    /// Some tools are not functions (custom or built-in tool types): counted as their JSON.
    pub estimated: bool,
}

/// OpenAI: the rendered namespace plus its framing. `first_system` is the text of the request's
/// first system message, if any: the namespace is appended to it, which saves that message's
/// framing but adds a newline to its text (which may merge with its last token).
pub fn openai_tool_tokens(encoding: Encoding, tools: &ToolList, first_system: Option<&str>) -> ToolTokens {
    if tools.is_empty() {
        return ToolTokens::default();
    }
    let mut tokens = 0;
    if !tools.functions.is_empty() {
        tokens += encoding.count(&render_functions(&tools.functions)) + NAMESPACE_OVERHEAD;
        if let Some(system) = first_system {
            let padded = encoding.count(&format!("{system}\n"));
            tokens = (tokens + padded).saturating_sub(encoding.count(system) + SHARED_SYSTEM_SAVING);
        }
    }
    tokens +=
        tools.unrendered.iter().map(|tool| encoding.count(&crate::util::json_text::value_text(tool))).sum::<usize>();
    ToolTokens { tokens, estimated: !tools.unrendered.is_empty() }
}

/// OpenAI: what forcing costs. `tool_choice` wins over legacy `function_call` when both are given.
/// `"auto"` costs nothing, `"none"` 1, a named function its name plus 4 (API-reported);
/// `"required"` is counted as nothing, which no published figure confirms.
pub fn openai_choice_tokens(
    encoding: Encoding,
    tool_choice: Option<&Value>,
    function_call: Option<&Value>,
) -> Result<usize> {
    let (choice, what) = match (tool_choice, function_call) {
        (Some(choice), _) => (choice, "tool_choice"),
        (None, Some(choice)) => (choice, "function_call"),
        (None, None) => return Ok(0),
    };
    match choice {
        Value::Null => Ok(0),
        Value::String(mode) => match mode.as_str() {
            "auto" | "required" => Ok(0),
            "none" => Ok(NONE_CHOICE),
            other => Err(Error::invalid_argument(format!(
                "{what} must be \"auto\", \"none\", \"required\" or a function to call, got {other:?}"
            ))),
        },
        Value::Object(object) => {
            let name = object
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| object.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| Error::invalid_argument(format!("{what} names no function to call")))?;
            Ok(encoding.count(name) + FORCED_CALL_OVERHEAD)
        }
        other => {
            Err(Error::invalid_argument(format!("{what} must be a string or an object, got {}", type_name(other))))
        }
    }
}

/// Anthropic's documented tool-use system prompt, by model and tool choice (`auto`/`none`,
/// `any`/`tool`): https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview#pricing.
/// First matching prefix wins; the model id may carry a provider prefix (`anthropic.claude-…`).
const ANTHROPIC_TOOL_PROMPT: &[(&str, usize, usize)] = &[
    ("claude-opus-4-8", 290, 410),
    ("claude-opus-4-7", 675, 804),
    ("claude-opus-4-6", 497, 589),
    ("claude-opus-4-5", 496, 588),
    ("claude-opus-4-1", 313, 315),
    ("claude-opus-4", 313, 315),
    ("claude-sonnet-5", 354, 474),
    ("claude-sonnet-4-6", 497, 589),
    ("claude-sonnet-4-5", 496, 588),
    ("claude-sonnet-4", 313, 315),
    ("claude-haiku-4-5", 496, 588),
    ("claude-3-5-haiku", 264, 355),
    ("claude-3-7-sonnet", 346, 313),
    ("claude-3-5-sonnet-20240620", 294, 261),
    ("claude-3-5-sonnet", 346, 313),
    ("claude-3-opus", 530, 281),
    ("claude-3-sonnet", 159, 235),
    ("claude-3-haiku", 264, 340),
];
/// Unknown or unnamed Claude models: the Sonnet 4.6 row.
const ANTHROPIC_TOOL_PROMPT_DEFAULT: (usize, usize) = (497, 589);

/// Anthropic: the tool-use system prompt for `model` (known: whether the model is in the table).
pub fn anthropic_tool_prompt(model: Option<&str>, tool_choice: Option<&Value>) -> (usize, bool) {
    let forced = matches!(tool_choice.and_then(|c| c.get("type")).and_then(Value::as_str), Some("any" | "tool"));
    let id = model.map(|m| m.find("claude").map_or(m, |at| &m[at..]));
    let row = id.and_then(|id| ANTHROPIC_TOOL_PROMPT.iter().find(|(prefix, _, _)| id.starts_with(prefix)));
    let (auto, any) = row.map_or(ANTHROPIC_TOOL_PROMPT_DEFAULT, |&(_, auto, any)| (auto, any));
    (if forced { any } else { auto }, row.is_some())
}

/// Anthropic: each tool as its JSON (names, descriptions and schemas, as the docs list them),
/// plus the tool-use system prompt. Always an estimate: Claude's tokenizer is not public.
pub fn anthropic_tool_tokens(
    encoding: Encoding,
    tools: &Value,
    model: Option<&str>,
    tool_choice: Option<&Value>,
) -> Result<usize> {
    let Value::Array(items) = tools else {
        return Err(Error::invalid_argument(format!(
            "`tools` must be an array of tool definitions, got {}",
            type_name(tools)
        )));
    };
    if items.is_empty() {
        return Ok(0);
    }
    let definitions: usize = items.iter().map(|tool| encoding.count(&crate::util::json_text::value_text(tool))).sum();
    Ok(definitions + anthropic_tool_prompt(model, tool_choice).0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(functions: Value) -> String {
        let mut list = ToolList::default();
        ToolList::read(&functions, "functions", &mut list).unwrap();
        render_functions(&list.functions)
    }

    #[test]
    fn the_cookbook_tool_renders_as_the_namespace() {
        let rendered = render(json!([{
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {"type": "object", "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]}
            }, "required": ["location"]}
        }]));
        assert_eq!(
            rendered,
            "namespace functions {\n\n// Get the current weather in a given location\ntype get_current_weather = (_: {\n\
             // The city and state, e.g. San Francisco, CA\nlocation: string,\n// The unit of temperature to return\n\
             unit?: \"celsius\" | \"fahrenheit\",\n}) => any;\n\n} // namespace functions"
        );
    }

    #[test]
    fn nested_objects_arrays_unions_and_defaults() {
        let rendered = render(json!([{
            "name": "f",
            "parameters": {"type": "object", "required": ["items"], "properties": {
                "items": {"type": "array", "description": "top", "items": {"type": "object", "required": ["n"], "properties": {
                    "n": {"type": "integer", "description": "nested descriptions are not shown"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                }}},
                "mode": {"anyOf": [{"type": "string", "const": "a"}, {"type": "null"}], "default": "a"},
                "free": {"type": "object"},
                "ref": {"$ref": "#/$defs/Unit"},
                "missing": {"$ref": "#/$defs/Nope"},
                "multi": {"type": ["string", "number"]}
            }, "$defs": {"Unit": {"enum": ["m", 2, true]}}}
        }]));
        assert_eq!(
            rendered,
            "namespace functions {\n\ntype f = (_: {\n// top\nitems: {\n  n: number,\n  tags?: string[],\n}[],\n\
             mode?: string | null, // default: \"a\"\nfree?: object,\nref?: \"m\" | 2 | true,\nmissing?: any,\n\
             multi?: string | number,\n}) => any;\n\n} // namespace functions"
        );
    }

    #[test]
    fn functions_without_parameters_and_multiline_descriptions() {
        let rendered = render(json!([
            {"name": "a", "description": "line one\nline two"},
            {"name": "b", "parameters": {"type": "object", "properties": {}}}
        ]));
        assert_eq!(
            rendered,
            "namespace functions {\n\n// line one\n// line two\ntype a = () => any;\n\ntype b = () => any;\n\n} // namespace functions"
        );
    }

    #[test]
    fn hostile_schemas_render_without_recursing_forever() {
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        let cyclic = json!({"type": "object", "properties": {"me": {"$ref": "#"}}});
        for parameters in [deep, cyclic, json!("not a schema"), json!({"properties": {"p": 7}})] {
            let text = render(json!([{"name": "f", "parameters": parameters}]));
            assert!(text.ends_with("} // namespace functions"));
        }
    }

    #[test]
    fn every_tool_shape_is_read_and_bad_ones_are_refused() {
        let mut list = ToolList::default();
        let tools = json!([
            {"type": "function", "function": {"name": "a"}},
            {"name": "b", "input_schema": {"type": "object"}},
            {"type": "custom", "custom": {"name": "c"}}
        ]);
        ToolList::read(&tools, "tools", &mut list).unwrap();
        assert_eq!(list.functions.iter().map(|f| f.name).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(list.unrendered.len(), 1);
        for (bad, says) in [
            (json!({}), "must be an array"),
            (json!([7]), "tools[0] must be an object"),
            (json!([{"type": "function", "function": {"description": "x"}}]), "tools[0].function has no function name"),
            (json!([{"type": "function", "function": {"name": 3}}]), "name must be a string"),
            (
                json!([{"type": "function", "function": {"name": "f", "description": 1}}]),
                "description must be a string",
            ),
            (json!([{"type": "function", "function": "f"}]), "function must be an object"),
        ] {
            let error = ToolList::read(&bad, "tools", &mut ToolList::default()).unwrap_err();
            assert!(error.message.contains(says), "{error}");
        }
    }

    #[test]
    fn forcing_costs_what_the_api_reported() {
        let e = Encoding::Cl100kBase;
        assert_eq!(openai_choice_tokens(e, None, Some(&json!("auto"))).unwrap(), 0);
        assert_eq!(openai_choice_tokens(e, None, Some(&json!("none"))).unwrap(), 1);
        assert_eq!(openai_choice_tokens(e, None, Some(&json!({"name": "foo"}))).unwrap(), 5);
        let tool = json!({"type": "function", "function": {"name": "foo"}});
        assert_eq!(openai_choice_tokens(e, Some(&tool), Some(&json!("none"))).unwrap(), 5);
        assert!(openai_choice_tokens(e, Some(&json!("sometimes")), None).is_err());
        assert!(openai_choice_tokens(e, Some(&json!({"type": "function"})), None).is_err());
        assert!(openai_choice_tokens(e, Some(&json!(3)), None).is_err());
    }

    #[test]
    fn anthropic_tool_prompts_follow_the_published_table() {
        let any = json!({"type": "any"});
        assert_eq!(anthropic_tool_prompt(Some("claude-3-5-sonnet-20240620"), None), (294, true));
        assert_eq!(anthropic_tool_prompt(Some("claude-3-5-sonnet-20241022"), Some(&any)), (313, true));
        assert_eq!(anthropic_tool_prompt(Some("anthropic.claude-3-haiku-20240307-v1:0"), None), (264, true));
        assert_eq!(anthropic_tool_prompt(Some("claude-opus-4-20250514"), None), (313, true));
        assert_eq!(
            anthropic_tool_prompt(Some("claude-opus-4-6"), Some(&json!({"type": "tool", "name": "x"}))),
            (589, true)
        );
        assert_eq!(anthropic_tool_prompt(Some("gpt-4o"), None), (497, false));
        assert_eq!(anthropic_tool_prompt(None, None), (497, false));
    }
}
