// The packed form of a Pyodide memory snapshot, as the server ships it and Cache Storage keeps it:
// shared by the loader (pyodide-loader.mjs), the worker that makes the browser's own snapshot and
// the script that makes the server's (scripts/pyodide-snapshot.mjs). Importing it starts nothing.
//
// A snapshot is Pyodide's header followed by the interpreter's whole WebAssembly memory (31 MB), and
// most of that memory is either zero or already in pyodide.asm.wasm: its data segments (3.8 MB of
// CPython's static data, the Unicode tables and frozen modules among them) are what the memory
// holds before anything runs, and most of it is never written. So the packed form stores the
// memory XOR that initial image: every byte the interpreter did not change becomes zero, and only
// the 4 KiB pages with a non-zero byte are kept. Before a snapshot is taken, the allocator's free
// memory is zeroed (zeroFreeMemory), so garbage left by start-up does not count either. Measured on
// the page's snapshot (docs/page.md, "Bytes on the wire"): 4.2 MB Brotli as a plain packed image,
// 2.9 MB this way.
//
// Format: a header of little-endian uint32 (magic, snapshot bytes, page bytes, run count), then each
// run of kept pages as (first page, page count), then those pages' bytes in order. Pages are of
// the XOR of the snapshot with the wasm's initial memory placed after Pyodide's own header.

const PACKED_MAGIC = 0x32534941; // "AIS2"
// Bytes per page: fine enough that a page the interpreter touched once does not bring 60 KiB of
// unchanged neighbours, coarse enough that the run table stays a few thousand entries.
const PACKED_PAGE_BYTES = 4096;
const HEADER_WORDS = 4;
const WASM_MAGIC = 0x6d736100; // "\0asm"
const DATA_SECTION = 11;
// Offset of the word of Pyodide's snapshot header that says where its memory starts.
const PYODIDE_MEMORY_OFFSET_WORD = 1;

/** The memory a fresh instance of this wasm starts with, up to the end of its last data segment:
 * its active data segments laid out at their offsets (Pyodide's are all active, at constant offsets). */
export function initialMemory(wasmBytes) {
  const bytes = wasmBytes instanceof Uint8Array ? wasmBytes : new Uint8Array(wasmBytes);
  if (new DataView(bytes.buffer, bytes.byteOffset, 8).getUint32(0, true) !== WASM_MAGIC) {
    throw new Error("not a WebAssembly module");
  }
  let at = 8;
  const uleb = () => {
    let result = 0;
    let shift = 0;
    let byte;
    do {
      byte = bytes[at++];
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return result;
  };
  const sleb32 = () => {
    let result = 0;
    let shift = 0;
    let byte;
    do {
      byte = bytes[at++];
      result |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    return shift < 32 && byte & 0x40 ? result | (-1 << shift) : result;
  };
  while (at < bytes.length) {
    const id = bytes[at++];
    const size = uleb();
    const end = at + size;
    if (id === DATA_SECTION) {
      const segments = [];
      let top = 0;
      for (let count = uleb(), i = 0; i < count; i++) {
        const flags = uleb();
        // 0: active in memory 0 with an i32.const offset; anything else is a layout this does not know.
        if (flags !== 0 || bytes[at++] !== 0x41) throw new Error(`a data segment of kind ${flags}`);
        const offset = sleb32();
        if (bytes[at++] !== 0x0b) throw new Error("a data segment offset that is not a constant");
        const length = uleb();
        segments.push([offset, at, length]);
        top = Math.max(top, offset + length);
        at += length;
      }
      const image = new Uint8Array(top);
      for (const [offset, from, length] of segments) image.set(bytes.subarray(from, from + length), offset);
      return image;
    }
    at = end;
  }
  return new Uint8Array(0);
}

function memoryStart(snapshot) {
  return new DataView(snapshot.buffer, snapshot.byteOffset, 16).getUint32(4 * PYODIDE_MEMORY_OFFSET_WORD, true);
}

// XOR the initial image into the snapshot's memory, in place (its own inverse).
function xorImage(snapshot, image) {
  const start = memoryStart(snapshot);
  const length = Math.min(image.length, snapshot.length - start);
  for (let i = 0; i < length; i++) snapshot[start + i] ^= image[i];
}

function isZero(bytes, start, end) {
  for (let i = start; i < end; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** The packed form of Pyodide's snapshot (makeMemorySnapshot's bytes), given the wasm's initial memory. */
export function packSnapshot(snapshot, image) {
  const bytes = new Uint8Array(snapshot); // a copy: the XOR is done in place
  xorImage(bytes, image);
  const runs = [];
  for (let page = 0; page * PACKED_PAGE_BYTES < bytes.length; page++) {
    const start = page * PACKED_PAGE_BYTES;
    if (isZero(bytes, start, Math.min(start + PACKED_PAGE_BYTES, bytes.length))) continue;
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === page) last[1] += 1;
    else runs.push([page, 1]);
  }
  const pages = runs.reduce((sum, [, count]) => sum + count, 0);
  const head = (HEADER_WORDS + 2 * runs.length) * 4;
  const out = new Uint8Array(head + pages * PACKED_PAGE_BYTES);
  const words = new DataView(out.buffer);
  [PACKED_MAGIC, bytes.length, PACKED_PAGE_BYTES, runs.length].forEach((v, i) => words.setUint32(4 * i, v, true));
  let offset = head;
  runs.forEach(([first, count], i) => {
    words.setUint32(4 * (HEADER_WORDS + 2 * i), first, true);
    words.setUint32(4 * (HEADER_WORDS + 2 * i + 1), count, true);
    const from = first * PACKED_PAGE_BYTES;
    out.set(bytes.subarray(from, from + count * PACKED_PAGE_BYTES), offset);
    offset += count * PACKED_PAGE_BYTES;
  });
  return out;
}

/** The snapshot a packed one stands for, byte for byte; throws on anything that is not one. */
export function unpackSnapshot(buffer, image) {
  const source = buffer instanceof Uint8Array ? buffer : new Uint8Array(buffer);
  const view = new DataView(source.buffer, source.byteOffset, source.byteLength);
  const word = (i) => view.getUint32(4 * i, true);
  if (source.length < HEADER_WORDS * 4 || word(0) !== PACKED_MAGIC) throw new Error("not a packed snapshot");
  const [length, pageBytes, count] = [word(1), word(2), word(3)];
  const snapshot = new Uint8Array(length);
  let offset = (HEADER_WORDS + 2 * count) * 4;
  for (let i = 0; i < count; i++) {
    const [first, pages] = [word(HEADER_WORDS + 2 * i), word(HEADER_WORDS + 2 * i + 1)];
    const size = pages * pageBytes;
    const at = first * pageBytes;
    if (at >= length || offset + size > source.length) throw new Error("a truncated snapshot");
    snapshot.set(source.subarray(offset, offset + Math.min(size, length - at)), at);
    offset += size;
  }
  if (snapshot.length < 16 || memoryStart(snapshot) >= snapshot.length) throw new Error("a snapshot without memory");
  xorImage(snapshot, image);
  return snapshot;
}

// Sizes zeroFreeMemory asks the allocator for, largest first, so big free chunks go in few calls
// and the small leftovers after them; below the smallest, a free chunk is all header.
const ZEROING_SIZES = [1 << 20, 1 << 16, 1 << 12, 1 << 9, 1 << 6, 16];

/** Zero the allocator's free memory before a snapshot is taken: freed blocks keep whatever they
 * held, which would otherwise be shipped and inflated with the live memory (5.9 MB of the page's
 * 14.7 MB heap is free). Every free block is allocated, zeroed and freed again; the allocator only
 * writes its own headers back. Stops at each size once a block would come from growing the heap. */
export function zeroFreeMemory(module) {
  const taken = [];
  for (const size of ZEROING_SIZES) {
    for (;;) {
      const top = module._sbrk(0);
      const block = module._malloc(size);
      if (!block) break;
      if (module._sbrk(0) !== top) {
        module._free(block);
        break;
      }
      module.HEAPU8.fill(0, block, block + module._malloc_usable_size(block));
      taken.push(block);
    }
  }
  for (const block of taken) module._free(block);
}
