package checkpoint

import "testing"

// FuzzManifest feeds arbitrary bytes to the manifest reader: it must
// return a manifest of format 1 or an error, never panic.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"format":1,"files":[{"path":"variables.gob","size":12,"sha256":"` +
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" + `"}]}`))
	f.Add([]byte(`{"format":1,"files":[{"path":"../x","size":1,"sha256":""}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := parseManifest(data); err == nil && m.Format != 1 {
			t.Fatalf("manifest format %d accepted", m.Format)
		}
	})
}
