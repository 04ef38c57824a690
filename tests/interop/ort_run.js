// tests/interop/ort_run.js - run an ONNX model in ONNX Runtime (npm's
// onnxruntime-node) on a NumPy .npy float32 batch.
//
//   node ort_run.js MODEL.onnx X.npy OUT_PREFIX
//
// feeds X to the model's one input and writes each output as
// OUT_PREFIX.<output name>.npy. onnxruntime-node is looked up in
// $ORT_NODE_DIR/node_modules (the directory `npm install` ran in), then as
// usual. Exit 77 when it cannot be loaded (the test skips).
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
    const dirs = [];
    if (process.env.ORT_NODE_DIR)
        dirs.push(path.join(process.env.ORT_NODE_DIR, 'node_modules', 'onnxruntime-node'));
    dirs.push('onnxruntime-node');
    for (const d of dirs) {
        try {
            return require(d);
        } catch (e) {
            if (d === dirs[dirs.length - 1]) {
                console.error('ort_run: cannot load onnxruntime-node: ' + e.message.split('\n')[0]);
                process.exit(77);
            }
        }
    }
}

// NumPy format 1.0/2.0, '<f4', C order
function readNpy(file) {
    const b = fs.readFileSync(file);
    if (b.toString('latin1', 0, 6) !== '\x93NUMPY')
        throw new Error(file + ': not a .npy file');
    const major = b[6];
    const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
    const start = major === 1 ? 10 : 12;
    const header = b.toString('latin1', start, start + hlen);
    if (!/'descr':\s*'<f4'/.test(header) || /'fortran_order':\s*True/.test(header))
        throw new Error(file + ': not a little-endian float32 array in C order: ' + header);
    const shape = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(',')
        .map((s) => s.trim()).filter((s) => s.length).map(Number);
    const n = shape.reduce((a, c) => a * c, 1);
    const data = new Float32Array(n);
    const off = start + hlen;
    for (let i = 0; i < n; i++)
        data[i] = b.readFloatLE(off + 4 * i);
    return {shape, data};
}

function writeNpy(file, dims, data) {
    let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
        dims.join(', ') + (dims.length === 1 ? ',' : '') + '), }';
    const pad = 64 - ((10 + h.length + 1) % 64);
    h += ' '.repeat(pad % 64) + '\n';
    const b = Buffer.alloc(10 + h.length + 4 * data.length);
    b.write('\x93NUMPY', 0, 'latin1');
    b[6] = 1;
    b[7] = 0;
    b.writeUInt16LE(h.length, 8);
    b.write(h, 10, 'latin1');
    for (let i = 0; i < data.length; i++)
        b.writeFloatLE(data[i], 10 + h.length + 4 * i);
    fs.writeFileSync(file, b);
}

async function main() {
    const [model, input, prefix] = process.argv.slice(2);
    if (!prefix) {
        console.error('usage: node ort_run.js MODEL.onnx X.npy OUT_PREFIX');
        process.exit(2);
    }
    const ort = loadOrt();
    const x = readNpy(input);
    const session = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'all'});
    const feeds = {};
    feeds[session.inputNames[0]] = new ort.Tensor('float32', x.data, x.shape);
    const out = await session.run(feeds);
    for (const name of session.outputNames) {
        writeNpy(prefix + '.' + name + '.npy', out[name].dims, out[name].data);
        console.log('wrote ' + prefix + '.' + name + '.npy: ' + name + ' (' + out[name].dims.join(',') + ')');
    }
}

main().catch((e) => {
    console.error('ort_run: ' + e.message);
    process.exit(1);
});
