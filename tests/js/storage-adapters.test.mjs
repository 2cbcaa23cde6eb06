// The storage-adapter conformance suite (context-compactor/storage-test), unchanged, on the
// adapters that run in Node: memory and the file system. (IndexedDB and localStorage run it in
// Chromium: tests/browser/storage.test.mjs.)
import { test, after } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { MemoryStorageAdapter } from "context-compactor";
import { FileSystemAdapter } from "context-compactor/storage/fs";
import { runStorageAdapterSuite } from "context-compactor/storage-test";

const log = (line) => console.log(`# ${line}`);

const data = new Map();
runStorageAdapterSuite({ name: "memory", open: () => new MemoryStorageAdapter({ data }), test, log });

const root = mkdtempSync(join(tmpdir(), "cc-fs-suite-"));
after(() => rmSync(root, { recursive: true, force: true }));
runStorageAdapterSuite({ name: "file system", open: () => FileSystemAdapter.open({ root }), test, log });
