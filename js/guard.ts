/**
 * Internal: every call into the wasm goes through `call`, so that what comes out is a
 * `ContextCompactorError` and a trap never loses a session.
 *
 * The wasm is built with `panic = "abort"`: a trap (an allocation that fails, a JS stack
 * overflow while inside the wasm, a bug) unwinds no Rust frame, so the trapped call's locks stay
 * held and the shadow-stack pointer stays lowered. When a call ends in anything but a typed
 * error, the guard waits until no call into the wasm is under way (a trap in a call that user
 * code made from inside another call, a `toJSON` say, ends inside the outer one), puts the
 * shadow-stack pointer back where it was after instantiation, and asks the wasm to repair what
 * the trapped calls held (src/bindings/recovery.rs); then it throws a `ResourceError` (out of
 * memory or stack) or an `InternalError` (a bug) that says what became of the call's change.
 *
 * It also checks `this`: a method called on something that is not one of the package's objects,
 * or on one already freed, throws an `InvalidArgumentError` instead of handing the wasm a
 * pointer; a second `free()` (or `[Symbol.dispose]()`) does nothing, as disposal should.
 */
import { recoverAfterTrap } from "./wasm.js";
import { ConflictError, ContextCompactorError, InternalError, InvalidArgumentError, ResourceError, describe } from "./errors.js";

/** What the guard needs of the instance's raw exports (what instantiation returns). */
export interface WasmInstance {
  memory: WebAssembly.Memory;
  /** Exported by build.rs (`--export=__stack_pointer`). */
  __stack_pointer?: WebAssembly.Global;
}

interface RecoveryReport {
  repaired: number;
  undone: number;
  failedAllocation: number;
}

let instance: WasmInstance | undefined;
let stackStart = 0;
/** Calls into the wasm under way (more than one: a call made from user code the wasm ran). */
let depth = 0;
/** A call ended abnormally and the repair has not run yet (it runs once `depth` is 0). */
let pending = false;

/** Objects the glue made (constructors and `__wrap`): the only valid `this` of a method. */
const made = new WeakSet<object>();

/**
 * The package's objects a call under way runs on (its `this`), with how many calls use each: a `free()` of one of them from user code that call ran (a `toJSON`, a getter) is
 * refused, since the glue would detach the wrapper at once and drop the object only once the
 * call returns, leaving it unreachable.
 */
const inUse = new Map<object, number>();

function hold(object: object): void {
  inUse.set(object, (inUse.get(object) ?? 0) + 1);
}

function release(object: object): void {
  const count = (inUse.get(object) ?? 1) - 1;
  if (count > 0) inUse.set(object, count);
  else inUse.delete(object);
}

/** Called by the entry once the wasm is instantiated, before any call. */
export function attach(wasm: WasmInstance): void {
  instance = wasm;
  const pointer = wasm.__stack_pointer;
  if (pointer) stackStart = Number(pointer.value);
}

/** Puts the shadow stack back and repairs what trapped calls held; `undefined` if it failed. */
function repair(): RecoveryReport | undefined {
  try {
    const pointer = instance?.__stack_pointer;
    if (pointer) pointer.value = stackStart;
    const report = recoverAfterTrap() as RecoveryReport;
    pending = false;
    return report;
  } catch {
    // Out of stack again (we are still deep in the caller's recursion) or out of memory: the
    // repair runs again before the next call.
    return undefined;
  }
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

/** The typed error for a call that ended in `error`, which is not one of ours. */
function failure(error: unknown, what: string, report: RecoveryReport | undefined): ContextCompactorError {
  const text = error instanceof Error ? `${error.name}: ${describe(error)}` : describe(error);
  let typed: ContextCompactorError;
  const outcome =
    report === undefined
      ? "the library repairs itself before the next call"
      : report.undone > 0
        ? "the change it was making was undone, and the objects it used work as before"
        : "the objects it used work as before, holding what they held";
  if (error instanceof RangeError && /call stack/i.test(error.message)) {
    typed = new ResourceError(`${what} ran out of stack (was it called from deep recursion?): ${outcome}`);
  } else if (error instanceof RangeError) {
    typed = new ResourceError(`${what}: the JS engine refused a value that large (${text}): ${outcome}`);
  } else if (report !== undefined && report.failedAllocation > 0) {
    const memory = instance ? `, with ${mb(instance.memory.buffer.byteLength)} of wasm memory in use` : "";
    typed = new ResourceError(
      `${what} ran out of memory (an allocation of ${mb(report.failedAllocation)} failed${memory}): ${outcome}`,
    );
  } else if (error instanceof Error && error.message === "null pointer passed to rust") {
    typed = new InvalidArgumentError(`${what}: the object was freed (free() or [Symbol.dispose]())`);
  } else if (error instanceof Error && /recursive use of an object/.test(error.message)) {
    typed = new ConflictError(`${what}: the object is in use by a call that has not returned (a re-entrant call?)`);
  } else if (error instanceof TypeError) {
    typed = new InvalidArgumentError(`${what}: ${error.message}`);
  } else if (typeof WebAssembly !== "undefined" && error instanceof WebAssembly.RuntimeError) {
    typed = new InternalError(`${what} stopped on a bug in the library (${text}), please report it: ${outcome}`);
  } else {
    typed = new InternalError(`${what} failed unexpectedly (${text}): ${outcome}`);
  }
  Object.defineProperty(typed, "cause", { value: error, configurable: true, writable: true });
  return typed;
}

/**
 * What a call that ran out of stack throws when there is not stack enough left to make the error
 * that says more (throwing an object made beforehand needs none).
 */
const OUT_OF_STACK = new ResourceError(
  "a call into context-compactor ran out of stack (was it called from deep recursion?): what it was changing was " +
    "undone or never begun, and the library repairs itself before the next call",
);

/**
 * Runs `target` on `self` with `args` as a call into the wasm named `what`, once `checkThis`
 * (the method's check of `this`) passes.
 */
function call(target: Function, self: unknown, args: unknown[], what: string, checkThis?: () => void): unknown {
  try {
    checkThis?.();
    if (pending && depth === 0 && repair() === undefined) {
      throw new ResourceError(`${what}: the library is still repairing itself after a failed call (out of stack?); try again`);
    }
  } catch (error) {
    // Nothing was entered; a RangeError here is the engine's stack running out in the guard.
    throw error instanceof ContextCompactorError ? error : OUT_OF_STACK;
  }
  depth++;
  // Only methods' `this` is one of the package's objects (no binding takes one as an argument).
  const borrowed = self !== null && typeof self === "object" && made.has(self) ? self : undefined;
  if (borrowed) hold(borrowed);
  try {
    return Reflect.apply(target, self, args);
  } catch (error) {
    if (error instanceof ContextCompactorError) throw error;
    pending = true;
    let typed = OUT_OF_STACK;
    try {
      typed = failure(error, what, depth === 1 ? repair() : undefined);
    } catch {
      // Out of stack while saying what happened: OUT_OF_STACK says it.
    }
    throw typed;
  } finally {
    if (borrowed) release(borrowed);
    depth--;
  }
}

/** `this` of a method: one of the package's objects, not freed. */
function check(self: unknown, className: string, what: string): void {
  if (self === null || typeof self !== "object" || !made.has(self)) {
    throw new InvalidArgumentError(`${what} was called on something that is not a ${className}`);
  }
  if ((self as { __wbg_ptr?: number }).__wbg_ptr === 0) {
    throw new InvalidArgumentError(`${what}: this ${className} was freed (free() or [Symbol.dispose]())`);
  }
}

function method(fn: Function, className: string, name: string): Function {
  const what = `${className}.${name}`;
  const guarded = function (this: unknown, ...args: unknown[]) {
    return call(fn, this, args, what, () => check(this, className, what));
  };
  Object.defineProperty(guarded, "name", { value: name });
  return guarded;
}

/**
 * The glue's `free()` while a borrow the guard did not see holds the object: it is dropped when
 * the borrow ends.
 */
const FREED_LATER = /ownership of Rust value while it was borrowed/;

/**
 * `free()`: a second one does nothing; one while a call uses the object (from a `toJSON` or a
 * getter that call ran) is refused with a `ConflictError`, and the object stays usable.
 */
function free(fn: Function, className: string): Function {
  const what = `${className}.free`;
  return function free(this: unknown) {
    if (this !== null && typeof this === "object" && made.has(this) && (this as { __wbg_ptr?: number }).__wbg_ptr === 0) {
      return;
    }
    check(this, className, what);
    if (inUse.has(this as object)) {
      throw new ConflictError(
        `${what}: this ${className} is in use by a call that has not returned (free() from a toJSON or getter that call ran?); ` +
          "it was not freed and stays usable: free it once that call has returned",
      );
    }
    try {
      call(fn, this, [], what);
    } catch (error) {
      // The glue released the object but a borrow (a call under way) still holds it: it is
      // dropped when that ends, as the finalizer would; that is what freeing it asks.
      if (error instanceof ContextCompactorError && error.cause instanceof Error && FREED_LATER.test(error.cause.message)) return;
      throw error;
    }
  };
}

/**
 * Guards a class of the glue in place (its methods, accessors and statics, for every object of
 * it wherever made) and returns it behind a proxy whose `new` is guarded too.
 */
export function guardClass<C extends { readonly prototype: object; readonly name: string }>(cls: C): C {
  const className = cls.name;
  const proto = cls.prototype as Record<PropertyKey, unknown>;
  for (const key of Reflect.ownKeys(proto)) {
    if (key === "constructor" || key === "__destroy_into_raw" || key === Symbol.dispose) continue;
    const descriptor = Object.getOwnPropertyDescriptor(proto, key);
    if (!descriptor) continue;
    const name = String(key);
    if (key === "free" && typeof descriptor.value === "function") {
      descriptor.value = free(descriptor.value, className);
    } else if (typeof descriptor.value === "function") {
      descriptor.value = method(descriptor.value, className, name);
    } else {
      if (descriptor.get) descriptor.get = method(descriptor.get, className, name) as () => unknown;
      if (descriptor.set) descriptor.set = method(descriptor.set, className, name) as (v: unknown) => void;
    }
    Object.defineProperty(proto, key, descriptor);
  }
  if (Symbol.dispose && typeof proto.free === "function") {
    Object.defineProperty(proto, Symbol.dispose, { value: proto.free, writable: true, configurable: true });
  }
  const statics = cls as unknown as Record<string, Function>;
  const wrap = statics.__wrap;
  if (typeof wrap === "function") {
    // Every object the glue hands out goes through here (or the constructor, below).
    statics.__wrap = function (this: unknown, ptr: number) {
      const object = Reflect.apply(wrap, this, [ptr]) as object;
      made.add(object);
      return object;
    };
  }
  for (const key of Object.getOwnPropertyNames(cls)) {
    const value = statics[key];
    if (key === "__wrap" || key === "prototype" || typeof value !== "function") continue;
    const what = `${className}.${key}`;
    statics[key] = Object.defineProperty(
      function (this: unknown, ...args: unknown[]) {
        return call(value, cls, args, what);
      },
      "name",
      { value: key },
    );
  }
  const proxy = new Proxy(cls, {
    construct(target, args, newTarget) {
      const object = call(Reflect.construct, undefined, [target, args, newTarget], `new ${className}`) as object;
      // A class the wasm exports without a constructor (MemoryModule) gives back an object that
      // holds nothing: every call on it would fail as if it were freed.
      if (!(object as { __wbg_ptr?: number }).__wbg_ptr) {
        throw new InvalidArgumentError(`${className} cannot be made with \`new\`: get one from the object that owns it (e.g. session.memory)`);
      }
      made.add(object);
      return object;
    },
    apply() {
      throw new InvalidArgumentError(`${className} is a class: call it with \`new\``);
    },
  });
  Object.defineProperty(proto, "constructor", { value: proxy, writable: true, configurable: true });
  return proxy;
}

/** A function of the glue, guarded. */
export function guardFunction<F extends (...args: never[]) => unknown>(fn: F): F {
  const what = fn.name;
  const guarded = function (this: unknown, ...args: unknown[]) {
    return call(fn, undefined, args, what);
  };
  Object.defineProperty(guarded, "name", { value: what });
  return guarded as unknown as F;
}
