//! Which tool results are file contents, and which files later calls touch: what the digest
//! stages need (a read of a file that a later read, edit, write or patch touches is stale). Built
//! once per history and extended as it grows (the log is append-only), kept in the `ReduceCache`.

use crate::compact::repair::Item;
use crate::extract::call_files;
use crate::message::Part;
use crate::util::fasthash::FastMap;

#[derive(Clone, Debug, Default)]
pub(crate) struct FileIndex {
    /// How many messages it covers, and the last one's id (to know the history it was built on).
    len: usize,
    last_id: String,
    /// The file an editor tool has open after those messages (SWE-agent edits it by default).
    open: Option<String>,
    /// Per call (message, part): the path whose contents its result is ("" when a listed read
    /// tool names none).
    reads: FastMap<(usize, usize), String>,
    /// Per path: the last message whose calls touch it.
    last_touch: FastMap<String, usize>,
}

impl FileIndex {
    /// Brings the index up to `items`: the new messages only, when `items` extends what it covers.
    pub(crate) fn update(&mut self, items: &[Item], tools: &[String]) {
        let extends = self.len <= items.len()
            && (self.len == 0 || items.get(self.len - 1).is_some_and(|item| item.id == self.last_id));
        if !extends {
            *self = FileIndex::default();
        }
        for (i, item) in items.iter().enumerate().skip(self.len) {
            for (j, part) in item.message.content.parts.iter().enumerate() {
                let Part::ToolCall(call) = part else { continue };
                let (read, ops) = call_files(call, tools, &mut self.open);
                if let Some(path) = read.or_else(|| call.id.starts_with("call_read_file_").then(String::new)) {
                    self.reads.insert((i, j), path);
                }
                for (path, _) in ops {
                    self.last_touch.insert(path, i);
                }
            }
        }
        self.len = items.len();
        self.last_id = items.last().map_or_else(String::new, |item| item.id.to_string());
    }

    /// The path the call at (`msg`, `part`) reads whole, if its result is a file's contents.
    pub(crate) fn read(&self, msg: usize, part: usize) -> Option<&str> {
        self.reads.get(&(msg, part)).map(String::as_str)
    }

    /// Whether any call reads a file whole.
    pub(crate) fn has_reads(&self) -> bool {
        !self.reads.is_empty()
    }

    /// Whether a call after message `msg` touches `path`.
    pub(crate) fn superseded(&self, msg: usize, path: &str) -> bool {
        !path.is_empty() && self.last_touch.get(path).is_some_and(|last| *last > msg)
    }
}
