// A tool chain of three messages, tagged `tag`: a question, a tool call, its result (the unit the
// processes of tests/js/sql-store.test.mjs append, which must never be split or interleaved).
export function chain(tag) {
  const call = `call_${tag.replace(/\W/g, "_")}`;
  return [
    { role: "user", content: `question ${tag}` },
    { role: "assistant", content: null, tool_calls: [{ id: call, type: "function", function: { name: "lookup", arguments: `{"q":"${tag}"}` } }] },
    { role: "tool", tool_call_id: call, content: `result ${tag}` },
  ];
}
