package model

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzSafetensorsHeader checks that no header, however broken, makes the
// parser panic, and that accepted headers keep every tensor inside the file.
func FuzzSafetensorsHeader(f *testing.F) {
	f.Add(rawSafetensors(`{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(rawSafetensors(`{"a":{"dtype":"BF16","shape":[2,1],"data_offsets":[0,4]},"b":{"dtype":"F16","shape":[],"data_offsets":[4,6]}}`, 6))
	f.Add(rawSafetensors(`{"a":{"dtype":"F32","shape":[1e30],"data_offsets":[0,4]}}`, 4))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseSafetensorsHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		n := int64(binary.LittleEndian.Uint64(data))
		for name, ti := range h.Tensors {
			if 8+n+int64(ti.DataOffsets[1]) > int64(len(data)) {
				t.Fatalf("tensor %q extends past the file", name)
			}
		}
	})
}
