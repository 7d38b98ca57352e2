"""Mutation check for gguf.Dequantize (gguf/dequant.go, and
internal/quant/ggml.go, which decodes Q4_0, Q4_1, Q8_0 and Q4_K and
converts fp16 for it): each mutant changes one operation, runs
TestDequantizeMatchesGGUFPackage and TestDequantizeF16AllValues, and must
fail them; the "[equivalent]" mutants reorder or fuse operations whose
products are exact in float32 and must pass (they cannot change a bit).
The files are restored afterwards. Run from gguf/:

    python3 testdata/dequant/mutants.py
"""
import subprocess, sys
G='dequant.go'
Q='../internal/quant/ggml.go'
origs={G: open(G).read(), Q: open(Q).read()}
muts=[
 (Q, "Q4_1 + m → − m", "y[j] = float32(float32(qs[j]&0x0f)*d) + m", "y[j] = float32(float32(qs[j]&0x0f)*d) - m"),
 (G, "Q5_1 m read from the d field", "d, m := fp16(le16(b)), fp16(le16(b[2:]))\n\t\tqh := binary.LittleEndian.Uint32(b[4:])", "d, m := fp16(le16(b)), fp16(le16(b[0:]))\n\t\tqh := binary.LittleEndian.Uint32(b[4:])"),
 (G, "Q2_K − ml → + ml", "out[l] = float32(dl*float32(int8(q[half+l]>>shift&3))) - ml", "out[l] = float32(dl*float32(int8(q[half+l]>>shift&3))) + ml"),
 (G, "Q2_K min from the scale nibble", "dl, ml := d*float32(sc&0x0f), min*float32(sc>>4)", "dl, ml := d*float32(sc&0x0f), min*float32(sc&0x0f)"),
 (Q, "Q4_K − m1 → + m1", "lo[l] = float32(d1*float32(q[l]&0x0f)) - m1", "lo[l] = float32(d1*float32(q[l]&0x0f)) + m1"),
 (Q, "Q4_K d2 = d·sc → dmin·sc", "d2, m2 := d*float32(sc), dmin*float32(m)", "d2, m2 := dmin*float32(sc), dmin*float32(m)"),
 (G, "Q5_K − m2 → + m2", "hi[l] = float32(d2*float32(q2)) - m2", "hi[l] = float32(d2*float32(q2)) + m2"),
 (G, "Q6_K sc[is+4] → sc[is+2]", "out[l+64] = d * float32(int8(sc[is+4])) * float32(q3)", "out[l+64] = d * float32(int8(sc[is+2])) * float32(q3)"),
 (G, "Q6_K signed scale read unsigned", "out[l] = d * float32(int8(sc[is])) * float32(q1)", "out[l] = d * float32(sc[is]) * float32(q1)"),
 (G, "Q6_K bias 32 → 31", "q4 := int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32", "q4 := int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 31"),
 (G, "Q3_K offset 4 → 3", "v -= 4", "v -= 3"),
 (G, "Q3_K high bit inverted", "if hm[half+l]&m == 0 {", "if hm[half+l]&m != 0 {"),
 (G, "Q3_K scale bias 32 → 31", "sc[j] = int8(lo|hi<<4) - 32", "sc[j] = int8(lo|hi<<4) - 31"),
 (G, "Q5_0 high-bit shift 12 → 11", "xh1 := byte(qh>>(j+12)) & 0x10\n\t\t\ty[j] = float32(int32", "xh1 := byte(qh>>(j+11)) & 0x10\n\t\t\ty[j] = float32(int32"),
 (Q, "Q8_0 int8 → uint8", "y[j] = float32(int8(qs[j])) * d", "y[j] = float32(qs[j]) * d"),
 (Q, "Q4_0 offset 8 → 7", "y[j+16] = float32(int(qs[j]>>4)-8) * d", "y[j+16] = float32(int(qs[j]>>4)-7) * d"),
 (G, "Q5_K second high bit u2 not shifted", "u2 <<= 2", "u2 <<= 1"),
 (Q, "get_scale_min_k4 high bits", "q[j+4]>>4 | (q[j]>>6)<<4", "q[j+4]>>4 | (q[j-4]>>6)<<4"),
 (Q, "fp16 subnormal scale 2^-24 → 2^-23", "float32(man)*0x1p-24", "float32(man)*0x1p-23"),
 (Q, "fp16 subnormal sign dropped", "return math.Float32frombits(math.Float32bits(float32(man)*0x1p-24) | sign)", "return float32(man) * 0x1p-24"),
 (Q, "fp16 NaN not quieted", "man |= 0x200", "man |= 0"),
 (G, "BF16 shift 16 → 15", "uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16", "uint32(binary.LittleEndian.Uint16(data[2*i:])) << 15"),
 # Equivalent mutants: every product here is exact in float32, so these
 # cannot change a bit (expected: MISSED).
 (Q, "[equivalent] Q4_K fused multiply-add", "lo[l] = float32(d1*float32(q[l]&0x0f)) - m1", "lo[l] = float32(math.FMA(float64(d1), float64(q[l]&0x0f), -float64(m1)))"),
 (Q, "[equivalent] Q4_1 fused multiply-add", "y[j] = float32(float32(qs[j]&0x0f)*d) + m", "y[j] = float32(math.FMA(float64(qs[j]&0x0f), float64(d), float64(m)))"),
 (G, "[equivalent] Q6_K d·(sc·q)", "out[l+64] = d * float32(int8(sc[is+4])) * float32(q3)", "out[l+64] = d * (float32(int8(sc[is+4])) * float32(q3))"),
]
ok=True
try:
    for p,name,a,b in muts:
        orig=origs[p]
        assert orig.count(a)==1, (name, p, orig.count(a))
        open(p,'w').write(orig.replace(a,b))
        r=subprocess.run(["go","test","-count=1","-run","TestDequantizeMatchesGGUFPackage|TestDequantizeF16AllValues","."],capture_output=True,text=True)
        caught = r.returncode!=0 and "FAIL" in r.stdout and "build failed" not in r.stdout+r.stderr
        if "build failed" in r.stdout+r.stderr or "[setup failed]" in r.stdout: caught=None
        which = sorted(set(l.split("/")[1].split(" ")[0] for l in r.stdout.splitlines() if l.strip().startswith("--- FAIL: TestDequantizeMatchesGGUFPackage/"))) + (["F16AllValues"] if "FAIL: TestDequantizeF16AllValues" in r.stdout else [])
        print(f"{'CAUGHT' if caught else 'MISSED' if caught is False else 'BUILD?'}  {name}: {which}")
        if caught is None: print(r.stdout[-800:], r.stderr[-800:])
        ok = ok and (bool(caught) != name.startswith("[equivalent]"))
        open(p,'w').write(orig)
finally:
    for p,orig in origs.items():
        open(p,'w').write(orig)
print("as expected: every real mutant caught, every equivalent one passes" if ok else "UNEXPECTED")
