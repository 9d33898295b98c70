// readwarc.cjs reads WARC files with webrecorder's warcio (an independent
// reader) and prints one JSON object per record: what warcio parsed, and the
// lengths and SHA-1 digests (base32) it computes here from the bytes warcio
// handed over, so the Go test can compare them with the declared ones.
//
// Usage: WARCIO_DIR=<dir with node_modules/warcio> node readwarc.cjs FILE...
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { createRequire } = require("module");

const warcio = createRequire(path.join(process.env.WARCIO_DIR, "package.json"))("warcio");

// RFC 4648 base32, written here rather than taken from the writer's side.
function base32(buf) {
  const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0, val = 0, out = "";
  for (const b of buf) {
    val = ((val << 8) | b) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += abc[(val >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += abc[(val << (5 - bits)) & 31];
  while (out.length % 8) out += "=";
  return out;
}
const sha1 = (b) => "sha1:" + base32(crypto.createHash("sha1").update(b).digest());

async function main() {
  for (const file of process.argv.slice(2)) {
    // Pass 1: whole blocks, HTTP not parsed.
    const blocks = [];
    for await (const r of warcio.WARCParser.iterRecords(fs.createReadStream(file), { parseHttp: false })) {
      const block = Buffer.from(await r.readFully(false));
      const h = {};
      for (const [k, v] of r.warcHeaders.headers) h[k] = v;
      blocks.push({ file: path.basename(file), version: r.warcHeaders.protocol, headers: h,
        type: r.warcType, id: r.warcHeader("WARC-Record-ID"), uri: r.warcTargetURI || "", date: r.warcDate,
        contentLength: r.warcContentLength, blockLength: block.length, blockDigest: sha1(block),
        declaredBlockDigest: r.warcBlockDigest || "", declaredPayloadDigest: r.warcPayloadDigest || "",
        blockText: r.warcType === "warcinfo" || r.warcType === "metadata" ? block.toString("utf8") : "" });
    }
    // Pass 2: HTTP heads parsed, payloads as archived (no content decoding).
    let i = 0;
    for await (const r of warcio.WARCParser.iterRecords(fs.createReadStream(file), { parseHttp: true })) {
      const out = blocks[i++];
      if (r.httpHeaders) {
        const payload = Buffer.from(await r.readFully(false));
        out.status = r.httpHeaders.statusCode ? Number(r.httpHeaders.statusCode) : 0;
        out.method = r.httpHeaders.method || "";
        out.httpHeaders = {};
        for (const [k, v] of r.httpHeaders.headers) out.httpHeaders[k.toLowerCase()] = v;
        out.payloadDigest = sha1(payload);
        out.payload = payload.toString("base64");
      } else {
        await r.skipFully();
      }
    }
    if (i !== blocks.length) throw new Error(`${file}: ${blocks.length} records in pass 1, ${i} in pass 2`);
    for (const b of blocks) process.stdout.write(JSON.stringify(b) + "\n");
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
