/**
 * The wasm module's classes and functions as the package hands them out: guarded (`guard.ts`:
 * typed errors only, and a trap never loses a session). The public surface (`api.ts`) re-exports
 * them, and the package's own modules (the session store) make their objects with them, so that
 * what they make passes the guard's checks too; both import this module, neither the other.
 */
import * as wasm from "./wasm.js";
import { guardClass, guardFunction } from "./guard.js";

export const Tokenizer = guardClass(wasm.Tokenizer);
export type Tokenizer = wasm.Tokenizer;
export const ConversationHistory = guardClass(wasm.ConversationHistory);
export type ConversationHistory = wasm.ConversationHistory;
export const Session = guardClass(wasm.Session);
export type Session = wasm.Session;
export const MemoryModule = guardClass(wasm.MemoryModule);
export type MemoryModule = wasm.MemoryModule;

export const recallContextTool = guardFunction(wasm.recallContextTool);
export const fileReaderTool = guardFunction(wasm.fileReaderTool);
export const supportedLanguages = guardFunction(wasm.supportedLanguages);
export const convertMessages = guardFunction(wasm.convertMessages);
export const validateMessages = guardFunction(wasm.validateMessages);
export const profileNames = guardFunction(wasm.profileNames);
export const resolveProfile = guardFunction(wasm.resolveProfile);
export const loadConversation = guardFunction(wasm.loadConversation);
export const loadRanks = guardFunction(wasm.loadRanks);
