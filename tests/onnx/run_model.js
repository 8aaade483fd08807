// Runs an ONNX model in ONNX Runtime (onnxruntime-node, installed here by scripts/setup.sh) on
// inputs given as raw little-endian files, and writes its outputs the same way.
//
//   node run_model.js [--repeat N] DIR...
//
// For each DIR (one node start for many models): DIR/model.onnx is the model; DIR/inputs.json lists its inputs in order, each
// {"name", "dtype" (float32, float64, int32, int64, bool), "dims", "file"} with "file" relative to
// DIR. The outputs, in the model's order, go to DIR/output_<i>.bin, and DIR/outputs.txt lists
// them, one line each: "NAME DTYPE DIMS FILE", DIMS comma-separated ("-" for a scalar). With --repeat N, each model then runs N more times and
// the mean wall time of one run in milliseconds is printed ("DIR latency_ms <t>"). ONNX Runtime
// runs on one thread, as the tests' tapeflow runs compare with.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

const kArrays = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  int64: BigInt64Array,
  bool: Uint8Array,
};

function readTensor(dir, spec) {
  const bytes = fs.readFileSync(path.join(dir, spec.file));
  const Array = kArrays[spec.dtype];
  if (!Array) throw new Error(`unknown dtype ${spec.dtype} of input ${spec.name}`);
  const data = new Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / Array.BYTES_PER_ELEMENT);
  return new ort.Tensor(spec.dtype, data.slice(), spec.dims);
}

async function run(dir, repeat) {
  const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
    intraOpNumThreads: 1,
  });
  const specs = JSON.parse(fs.readFileSync(path.join(dir, 'inputs.json'), 'utf8'));
  const feeds = {};
  for (const spec of specs) feeds[spec.name] = readTensor(dir, spec);
  const results = await session.run(feeds);
  const listed = session.outputNames.map((name, i) => {
    const t = results[name];
    const file = `output_${i}.bin`;
    fs.writeFileSync(path.join(dir, file), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    return `${name} ${t.type} ${t.dims.length ? t.dims.join(',') : '-'} ${file}\n`;
  });
  fs.writeFileSync(path.join(dir, 'outputs.txt'), listed.join(''));
  if (repeat > 0) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < repeat; ++i) await session.run(feeds);
    console.log(`${dir} latency_ms ${Number(process.hrtime.bigint() - start) / 1e6 / repeat}`);
  }
}

async function main() {
  const args = process.argv.slice(2);
  let repeat = 0;
  if (args[0] === '--repeat') {
    repeat = Number(args[1]);
    args.splice(0, 2);
  }
  for (const dir of args) {
    try {
      await run(dir, repeat);
    } catch (e) {
      throw new Error(`${dir}: ${e.message}`);
    }
  }
}

main().catch((e) => {
  console.error(`run_model.js: ${e.message}`);
  process.exit(1);
});
