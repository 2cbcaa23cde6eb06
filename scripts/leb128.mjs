// The wasm binary format's unsigned LEB128 numbers, for the scripts that rewrite the lite wasm
// (scripts/order-functions.mjs, scripts/short-names.mjs).

/** A reader of `bytes`: `leb(at)` is [the number at `at`, where the next field starts]. */
export const lebReader = (bytes) => (at) => {
  let value = 0, shift = 0, byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
};

/** `n` encoded. */
export const uleb = (n) => {
  const out = [];
  do {
    const low = n % 128;
    n = Math.floor(n / 128);
    out.push(n ? low | 0x80 : low);
  } while (n);
  return Buffer.from(out);
};
