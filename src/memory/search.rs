//! Keyword search ranked by relevance (BM25), built incrementally as documents arrive.
//! Words are lower-cased alphanumeric runs; Chinese, Japanese and Korean text, which has no
//! spaces, is indexed by single characters and character pairs.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

const K1: f64 = 1.2;
const B: f64 = 0.75;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum DocumentKind {
    Snapshot,
    Summary,
    Message,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub kind: DocumentKind,
    /// The snapshot, summary or message id.
    pub id: String,
    pub turn_number: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub document: usize,
    pub score: f64,
}

#[derive(Clone, Debug, Default)]
pub struct SearchIndex {
    documents: Vec<Document>,
    lengths: Vec<u32>,
    total_length: u64,
    postings: HashMap<String, Vec<(usize, u32)>>,
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FFFF) // CJK Extensions B and on
}

/// The terms of `text`, in order, with repeats.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_cjk: Option<char> = None;
    for c in text.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
            if let Some(p) = previous_cjk {
                out.push([p, c].iter().collect());
            }
            previous_cjk = Some(c);
        } else if c.is_alphanumeric() || c == '_' {
            previous_cjk = None;
            word.extend(crate::util::lowercase::of(c));
        } else {
            previous_cjk = None;
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

impl SearchIndex {
    pub fn len(&self) -> usize {
        self.documents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    pub fn document(&self, index: usize) -> Option<&Document> {
        self.documents.get(index)
    }

    pub fn add(&mut self, document: Document, text: &str) -> usize {
        let index = self.documents.len();
        let mut frequencies: HashMap<String, u32> = HashMap::new();
        let mut length = 0u32;
        for term in terms(text) {
            length = length.saturating_add(1);
            *frequencies.entry(term).or_default() += 1;
        }
        for (term, frequency) in frequencies {
            self.postings.entry(term).or_default().push((index, frequency));
        }
        self.documents.push(document);
        self.lengths.push(length);
        self.total_length += u64::from(length);
        index
    }

    /// Documents matching `query`, best first; ties keep insertion order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let n = self.documents.len() as f64;
        if n == 0.0 || limit == 0 {
            return Vec::new();
        }
        let average = (self.total_length as f64 / n).max(1.0);
        let mut query_terms = terms(query);
        crate::util::sort::sort(&mut query_terms);
        query_terms.dedup();
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for term in &query_terms {
            let Some(postings) = self.postings.get(term) else { continue };
            let df = postings.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(document, frequency) in postings {
                let tf = f64::from(frequency);
                let length = f64::from(self.lengths.get(document).copied().unwrap_or(0));
                let score = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average));
                *scores.entry(document).or_default() += score;
            }
        }
        let mut hits: Vec<Hit> = scores.into_iter().map(|(document, score)| Hit { document, score }).collect();
        crate::util::sort::sort_by(&mut hits, |a, b| b.score.total_cmp(&a.score).then(a.document.cmp(&b.document)));
        hits.truncate(limit);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str) -> Document {
        Document { kind: DocumentKind::Message, id: id.into(), turn_number: None }
    }

    #[test]
    fn words_are_lowercased_and_cjk_is_split_into_characters_and_pairs() {
        assert_eq!(terms("Read main.ts, NOW"), ["read", "main", "ts", "now"]);
        assert_eq!(terms("性能瓶颈"), ["性", "能", "性能", "瓶", "能瓶", "颈", "瓶颈"]);
    }

    #[test]
    fn rarer_and_more_frequent_terms_rank_higher() {
        let mut index = SearchIndex::default();
        index.add(doc("a"), "the flight was delayed, the user asked for a refund");
        index.add(doc("b"), "refund refund: the refund was processed");
        index.add(doc("c"), "the weather is nice");
        let hits = index.search("refund", 10);
        assert_eq!(hits.iter().map(|h| h.document).collect::<Vec<_>>(), [1, 0]);
        assert!(index.search("nothing-here", 10).is_empty());
        let chinese = {
            let mut i = SearchIndex::default();
            i.add(doc("x"), "分析了代码库结构");
            i.add(doc("y"), "发现性能瓶颈");
            i
        };
        assert_eq!(chinese.search("性能", 5)[0].document, 1);
    }
}
