//! Interning: the frozen JS objects of the last build (its messages, layout entries and receipt
//! runs), reused by the next build for what did not change, so that only what changed crosses
//! the boundary.

use std::sync::Arc;

use js_sys::{Object, Reflect};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::conversion::to_js;
use crate::compact::{Action, Assembled, EmitCache, Piece, ReceiptRun, Repair, Section};
use crate::error::{Error, Result};
use crate::message::{Format, Message};
use crate::util::fasthash::FastMap;

/// What the last build handed to JS: the frozen JS objects made from the request forms of the
/// context messages (which the session's `Compactor` keeps), layout entries and receipt runs.
/// A build sends across the boundary only what was not in the last one; the rest are the same
/// objects.
#[derive(Default)]
pub(crate) struct RequestCache {
    /// The format `sent` holds objects of.
    sent_format: Option<Format>,
    /// Per context message, a frozen array of its request objects.
    sent: Interned<ByIdentity>,
    pub(crate) layout: Interned<LayoutEntry>,
    /// The receipt's runs as the last build made them, with a private JS array of their objects:
    /// a build's runs are mostly the last one's, in the same places (all but those near the end).
    runs: Option<(Arc<Vec<ReceiptRun>>, js_sys::Array)>,
    /// The receipt's repairs as the last build sent them, with the list they were made from.
    repairs: Option<(Arc<Vec<Repair>>, JsValue)>,
}

/// Where one context message comes from (`BuildResult.layout`).
#[derive(PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) struct LayoutEntry {
    /// The stored messages it comes from (none for the summary and the placeholder).
    #[cfg_attr(test, ts(type = "readonly string[]"))]
    pub(crate) sources: Vec<String>,
    pub(crate) section: Section,
    pub(crate) action: Action,
}

/// A message as a key by identity (its address, which the held `Arc` keeps from being reused).
struct ByIdentity(Arc<Message>);

impl PartialEq for ByIdentity {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ByIdentity {}

impl std::hash::Hash for ByIdentity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as usize).hash(state);
    }
}

/// Frozen JS objects made for the last result, by the key they were made from: a build's
/// messages, layout and receipt runs are mostly those of the build before, and only the new ones
/// cross the boundary (in one `JSON.parse`).
pub(crate) struct Interned<K> {
    objects: FastMap<K, JsValue>,
}

impl<K> Default for Interned<K> {
    fn default() -> Self {
        Interned { objects: FastMap::default() }
    }
}

impl<K: std::hash::Hash + Eq> Interned<K> {
    /// One object per key, in order: the last call's for keys it had, the others from `make`
    /// (given the keys without one, it returns a JS array of their objects, in that order).
    /// Objects of keys not asked for are forgotten.
    fn objects(&mut self, keys: Vec<K>, make: impl FnOnce(&[K]) -> Result<JsValue>) -> Result<Vec<JsValue>> {
        let mut previous = std::mem::take(&mut self.objects);
        let mut slots: Vec<Option<JsValue>> = Vec::with_capacity(keys.len());
        let mut missing: Vec<K> = Vec::new();
        for key in keys {
            match previous.remove(&key).or_else(|| self.objects.get(&key).cloned()) {
                Some(object) => {
                    slots.push(Some(object.clone()));
                    self.objects.insert(key, object);
                }
                None => {
                    slots.push(None);
                    missing.push(key);
                }
            }
        }
        drop(previous);
        let made = if missing.is_empty() { js_sys::Array::new() } else { js_sys::Array::from(&make(&missing)?) };
        let mut made = missing.into_iter().zip(made.iter());
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            let object = match slot {
                Some(object) => object,
                None => match made.next() {
                    Some((key, object)) => {
                        deep_freeze(&object);
                        self.objects.insert(key, object.clone());
                        object
                    }
                    None => return Err(Error::internal("fewer objects made than asked for")),
                },
            };
            out.push(object);
        }
        Ok(out)
    }

    /// `objects` for keys that serialise to their objects, as a JS array.
    pub(crate) fn array(&mut self, keys: Vec<K>) -> Result<js_sys::Array>
    where
        K: serde::Serialize,
    {
        Ok(self.objects(keys, to_js::<[K]>)?.into_iter().collect())
    }
}

/// Freezes a parsed JSON value all the way down: objects shared between builds must not change.
fn deep_freeze(value: &JsValue) {
    if !value.is_object() {
        return;
    }
    let object = Object::unchecked_from_js_ref(value);
    Object::freeze(object);
    for child in Object::values(object).iter() {
        deep_freeze(&child);
    }
}

impl RequestCache {
    /// The receipt's runs as a new JS array: the last build's objects for the runs it began
    /// with too (one slice), frozen objects made for the others.
    pub(crate) fn runs_js(&mut self, runs: Arc<Vec<ReceiptRun>>) -> Result<js_sys::Array> {
        let (same, kept) = match &self.runs {
            Some((last, array)) => {
                let same = last.iter().zip(runs.iter()).take_while(|(a, b)| a == b).count();
                (same, array.slice(0, u32::try_from(same).unwrap_or(u32::MAX)))
            }
            None => (0, js_sys::Array::new()),
        };
        let made = match runs.get(same..) {
            Some(new) if !new.is_empty() => {
                let made = to_js(new)?;
                deep_freeze(&made);
                kept.concat(&js_sys::Array::from(&made))
            }
            _ => kept,
        };
        // The caller's array is a copy: what it does to it cannot reach the next build's.
        let out = made.slice(0, made.length());
        self.runs = Some((runs, made));
        Ok(out)
    }

    /// The receipt's repairs as a frozen JS array: the last build's while the receipt shares its
    /// list (a long history's thousands of repairs cross the boundary once, not per build).
    pub(crate) fn repairs_js(&mut self, repairs: Arc<Vec<Repair>>) -> Result<JsValue> {
        if let Some((list, array)) = &self.repairs {
            if Arc::ptr_eq(list, &repairs) {
                return Ok(array.clone());
            }
        }
        let array = to_js(repairs.as_slice())?;
        deep_freeze(&array);
        self.repairs = Some((repairs, array.clone()));
        Ok(array)
    }

    /// The request as the provider takes it (OpenAI's message array, Anthropic's
    /// `{ system?, messages }`): the objects of the last build for messages still in the context.
    pub(crate) fn request_js(&mut self, assembled: &Assembled, forms: &EmitCache) -> Result<JsValue> {
        if self.sent_format != Some(assembled.format) {
            self.sent = Interned::default();
            self.sent_format = Some(assembled.format);
        }
        let own: Vec<ByIdentity> = assembled
            .pieces
            .iter()
            .filter_map(|piece| match piece {
                Piece::Own(message) => Some(ByIdentity(Arc::clone(message))),
                Piece::Joined(..) => None,
            })
            .collect();
        let own =
            self.sent.objects(own, |missing| to_js(&missing.iter().map(|m| forms.own(&m.0)).collect::<Vec<_>>()))?;
        // Messages emitted together are new each build: all of them in one `JSON.parse`.
        let joined: Vec<&[Value]> = assembled
            .pieces
            .iter()
            .filter_map(|piece| match piece {
                Piece::Joined(list, _) => Some(list.as_slice()),
                Piece::Own(_) => None,
            })
            .collect();
        let joined = if joined.is_empty() { js_sys::Array::new() } else { js_sys::Array::from(&to_js(&joined)?) };
        deep_freeze(&joined);
        let (mut own, mut joined) = (own.into_iter(), joined.iter());
        let out = js_sys::Array::new();
        for piece in &assembled.pieces {
            let objects = match piece {
                Piece::Own(_) => own.next(),
                Piece::Joined(..) => joined.next(),
            }
            .ok_or_else(|| Error::internal("a piece of the request has no objects"))?;
            let objects = js_sys::Array::from(&objects);
            for i in 0..objects.length() {
                out.push(&objects.get(i));
            }
        }
        match assembled.format {
            Format::OpenAi | Format::Responses | Format::AiSdk => Ok(out.into()),
            Format::Anthropic => {
                let request = Object::new();
                if let Some(system) = &assembled.system {
                    Reflect::set(&request, &"system".into(), &to_js(system)?)
                        .map_err(|_| Error::internal("could not set the request's system"))?;
                }
                Reflect::set(&request, &"messages".into(), &out)
                    .map_err(|_| Error::internal("could not set the request's messages"))?;
                Ok(request.into())
            }
        }
    }
}
