//! Errors across the boundary: every core `Error` becomes the typed JS error the package's entry
//! installed a factory for (a `ContextCompactorError` subclass), so that methods can use `?`.

use std::cell::OnceCell;

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use crate::error::Error;

/// What every binding returns: a value, or the JS error to throw.
pub(crate) type JsResult<T> = std::result::Result<T, JsValue>;

thread_local! {
    /// Set once by the entry (a `OnceCell`, not a `RefCell`: reading it takes no borrow that a
    /// trap could leave held).
    static ERROR_FACTORY: OnceCell<Function> = const { OnceCell::new() };
}

/// Installs the function that turns an error kind, message and details into the JS error to
/// throw (the package's entry points install their `ContextCompactorError` subclasses).
#[wasm_bindgen(js_name = setErrorFactory)]
pub fn set_error_factory(
    #[wasm_bindgen(
        unchecked_param_type = "(kind: ErrorKind, message: string, details: { index?: number; path?: string }) => Error"
    )]
    factory: Function,
) {
    ERROR_FACTORY.with(|slot| {
        // Installed once per instance; a second install (the same factory) changes nothing.
        let _ = slot.set(factory);
    });
}

impl From<Error> for JsValue {
    fn from(error: Error) -> JsValue {
        let message = error.to_string();
        let details = Object::new();
        // Setting a property on a fresh plain object cannot fail.
        if let Some(index) = error.index {
            let _ = Reflect::set(&details, &"index".into(), &JsValue::from(index as f64));
        }
        if let Some(path) = &error.path {
            let _ = Reflect::set(&details, &"path".into(), &JsValue::from_str(path));
        }
        let factory = ERROR_FACTORY.with(|slot| slot.get().cloned());
        if let Some(factory) = factory {
            let made = factory.call3(
                &JsValue::NULL,
                &JsValue::from_str(error.kind.as_str()),
                &JsValue::from_str(&message),
                &details,
            );
            if let Ok(value) = made {
                return value;
            }
        }
        let plain = js_sys::Error::new(&message);
        plain.set_name(&format!("{}Error", error.kind.as_str()));
        plain.into()
    }
}
