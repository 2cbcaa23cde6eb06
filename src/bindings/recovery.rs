//! Surviving a trap. The wasm is built with `panic = "abort"`, and a trap (an allocation that
//! fails, a JS stack overflow while inside the wasm, a bug) unwinds no Rust frame: no
//! destructor runs, so whatever the trapped call held stays held, the shadow-stack pointer stays
//! where the call left it, and whatever the call was changing is left as it was at that moment.
//! The linear memory itself is intact. Recovering takes three parts:
//!
//! * the JS layer (js/guard.ts) wraps every binding; when a call ends in anything but a typed
//!   error, it waits until no wasm call is under way (the outermost call has ended: a trap in a
//!   call made from user code the library ran, such as a `toJSON`, ends inside an outer call),
//!   puts `__stack_pointer` back where it was after instantiation (build.rs exports it), and
//!   calls `recoverAfterTrap`;
//! * what a call holds is a `Lock`, and every `Lock` taken is registered in `HELD` until released:
//!   after a trap, the registry lists exactly what the trapped calls left held, and
//!   `recoverAfterTrap` takes it back and repairs it (`Recover`);
//! * the state a call changes is changed so that a trap leaves either the old state or the new
//!   one (see `Session::recover_after_trap`): primary data by one store or one `mem::replace`,
//!   appends by pushes into reserved room that the repair undoes whole, and what is derived from
//!   it (indexes, caches) is made again, the torn copy leaked rather than dropped.
//!
//! Allocations the input sizes are reserved ahead (`try_reserve`) and fail as typed errors; the
//! allocator itself is never left mid-operation by a stack overflow, since its functions touch
//! their state only after their own entry, which is where the engine checks the stack (see
//! `bindings::allocator`).

use std::cell::{Cell, UnsafeCell};
use std::ops::{Deref, DerefMut};
use std::rc::Rc;

use wasm_bindgen::prelude::*;

use crate::error::{Error, Result};

/// A value one call at a time may use (a `RefCell` that only lends it mutably), whose lock the
/// recovery can take back after a trap left it held.
pub(crate) struct Lock<T> {
    held: Cell<bool>,
    value: UnsafeCell<T>,
}

pub(crate) struct Guard<'a, T> {
    lock: &'a Lock<T>,
}

impl<T> Lock<T> {
    pub(crate) fn new(value: T) -> Lock<T> {
        Lock { held: Cell::new(false), value: UnsafeCell::new(value) }
    }

    pub(crate) fn try_lock(&self) -> Option<Guard<'_, T>> {
        if self.held.get() {
            return None;
        }
        self.held.set(true);
        Some(Guard { lock: self })
    }

    /// Takes the lock whatever it says.
    ///
    /// # Safety
    /// No `Guard` of this lock may be alive: only after a trap ended every call that held one.
    unsafe fn reclaim(&self) -> Guard<'_, T> {
        self.held.set(true);
        Guard { lock: self }
    }
}

impl<T> Deref for Guard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a guard exists only while `held` is set, which only it clears: it is the one
        // reference to the value (`reclaim` is called only once every other guard is gone).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for Guard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        self.lock.held.set(false);
    }
}

/// What owns `Lock`s, and repairs what they guard after a trap.
pub(crate) trait Recover {
    /// Takes back the locks and repairs what they guard; returns whether a change under way was
    /// undone.
    ///
    /// # Safety
    /// No call may be under way (see `Lock::reclaim`).
    unsafe fn recover(&self) -> bool;
}

/// Room for what the calls under way hold: calls nest only through user code the library runs
/// (a `toJSON`, a getter), a few levels deep.
const SLOTS: usize = 32;

thread_local! {
    /// Each slot is a `Cell` of an `Option<Rc>`, set and cleared by a move: a trap never leaves
    /// one half-written.
    static HELD: [Cell<Option<Rc<dyn Recover>>>; SLOTS] = const { [const { Cell::new(None) }; SLOTS] };
}

/// `owner` registered in `HELD` while the registration lives. Registered before its lock is
/// taken and unregistered after the lock is released, so that no trap can leave a lock held
/// that the registry does not list.
pub(crate) struct Registration {
    slot: usize,
}

impl Registration {
    pub(crate) fn new(owner: Rc<dyn Recover>) -> Result<Registration> {
        HELD.with(|held| {
            let slot = held.iter().position(|cell| {
                let taken = cell.take();
                let free = taken.is_none();
                cell.set(taken);
                free
            });
            match slot.and_then(|slot| held.get(slot).map(|cell| (slot, cell))) {
                Some((slot, cell)) => {
                    cell.set(Some(owner));
                    Ok(Registration { slot })
                }
                None => Err(Error::conflict(format!(
                    "more than {SLOTS} calls into the library are nested (calls made from user code it called)"
                ))),
            }
        })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let owner = HELD.with(|held| held.get(self.slot).and_then(Cell::take));
        drop(owner);
    }
}

/// A `Lock`'s guard, and the registration that lets the recovery find it.
pub(crate) struct Held<'a, T> {
    // Dropped first: the lock is released before the registration goes.
    guard: Guard<'a, T>,
    _registration: Registration,
}

impl<'a, T> Held<'a, T> {
    /// Takes `lock`, which `owner` owns and repairs after a trap; `None` if it is held.
    pub(crate) fn take(lock: &'a Lock<T>, owner: Rc<dyn Recover>) -> Result<Option<Held<'a, T>>> {
        let registration = Registration::new(owner)?;
        Ok(lock.try_lock().map(|guard| Held { guard, _registration: registration }))
    }
}

impl<T> Deref for Held<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// Takes back `lock` after a trap, to repair what it guards.
///
/// # Safety
/// As `Recover::recover`: no call may be under way.
pub(crate) unsafe fn reclaim<T>(lock: &Lock<T>) -> Guard<'_, T> {
    lock.reclaim()
}

/// Called by the JS layer (js/guard.ts) after a call ended in a trap, once no call is under way
/// and the shadow-stack pointer is back at its start: repairs what the trapped calls held.
/// Returns `{ repaired, undone, failedAllocation }`: how many sessions were repaired, how many
/// had a change under way undone, and the size of the allocation that failed since the last
/// recovery (0 if none), for the error the JS layer throws.
#[wasm_bindgen(js_name = recoverAfterTrap)]
pub fn recover_after_trap() -> JsValue {
    crate::bpe::reset_after_trap();
    let (mut repaired, mut undone) = (0u32, 0u32);
    for slot in 0..SLOTS {
        // The owner stays registered until it is repaired: a trap in the repair leaves it for the
        // next recovery.
        let owner = HELD.with(|held| {
            let owner = held.get(slot).and_then(Cell::take);
            if let Some(cell) = held.get(slot) {
                cell.set(owner.clone());
            }
            owner
        });
        let Some(owner) = owner else { continue };
        // SAFETY: the JS layer calls this only when no call into the wasm is under way, so every
        // guard the registry lists was left by a trapped call and is gone.
        undone += u32::from(unsafe { owner.recover() });
        repaired += 1;
        HELD.with(|held| drop(held.get(slot).and_then(Cell::take)));
    }
    let report = js_sys::Object::new();
    let set = |key: &str, value: f64| {
        // Setting a property on a fresh plain object cannot fail.
        let _ = js_sys::Reflect::set(&report, &key.into(), &JsValue::from(value));
    };
    set("repaired", repaired.into());
    set("undone", undone.into());
    set("failedAllocation", super::allocator::take_failed_allocation() as f64);
    report.into()
}
