# Average the model tensors (not optim.*) of several safetensors checkpoints; metadata and the rest from the last.
import json, struct, sys
import numpy as np
def read(p):
    b = open(p, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    return h, b[8 + n:]
out, ins = sys.argv[1], sys.argv[2:]
hs = [read(p) for p in ins]
h, data = hs[-1]
data = bytearray(data)
for name, t in h.items():
    if name == '__metadata__' or name.startswith('optim.'): continue
    assert t['dtype'] == 'F32'
    a, b = t['data_offsets']
    acc = np.zeros((b - a) // 4, np.float64)
    for hh, dd in hs:
        x, y = hh[name]['data_offsets']
        acc += np.frombuffer(dd[x:y], np.float32)
    data[a:b] = (acc / len(hs)).astype(np.float32).tobytes()
hb = json.dumps(h, separators=(',', ':')).encode()
hb += b' ' * ((8 - len(hb) % 8) % 8)
open(out, 'wb').write(struct.pack('<Q', len(hb)) + hb + bytes(data))
