package cpuimpl

import (
	"strings"
	"testing"
)

type table struct{ impl Impl }

func newFamilies(impls ...Impl) *Families[table] {
	f := New("test", &table{Portable}, func(t *table) Impl { return t.impl })
	for _, i := range impls {
		f.Add(&table{i})
	}
	return f
}

func TestStart(t *testing.T) {
	tests := []struct {
		name      string
		have      []Impl
		env       string
		want      Impl
		best      Impl
		hasAVX512 bool // Supported(AVX512)
	}{
		{"portable only", nil, "", Portable, Portable, false},
		{"best is AVX-512", []Impl{AVX2, AVX512}, "", AVX512, AVX512, true},
		{"env forces AVX2", []Impl{AVX2, AVX512}, "avx2", AVX2, AVX512, true},
		{"env forces portable, any case", []Impl{AVX2}, "Portable", Portable, AVX2, false},
		{"unsupported env value is ignored", []Impl{AVX2}, "avx512", AVX2, AVX2, false},
		{"unknown env value is ignored", []Impl{AVX2}, "sse9", AVX2, AVX2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvVar, tt.env)
			f := newFamilies(tt.have...)
			f.Start()
			if got := f.Active(); got != tt.want {
				t.Errorf("Active() = %v, want %v", got, tt.want)
			}
			if got := f.Load().impl; got != tt.want {
				t.Errorf("Load() is %v's table, want %v's", got, tt.want)
			}
			if got := f.Best(); got != tt.best {
				t.Errorf("Best() = %v, want %v", got, tt.best)
			}
			if got := f.Supported(AVX512); got != tt.hasAVX512 {
				t.Errorf("Supported(AVX512) = %v, want %v", got, tt.hasAVX512)
			}
		})
	}
}

func TestUse(t *testing.T) {
	t.Setenv(EnvVar, "")
	f := newFamilies(AVX2)
	f.Start()
	prev, err := f.Use(Portable)
	if err != nil || prev != AVX2 || f.Active() != Portable {
		t.Fatalf("Use(Portable) = %v, %v; active %v", prev, err, f.Active())
	}
	prev, err = f.Use(AVX512)
	if err == nil || !strings.Contains(err.Error(), "test: avx512 is not supported") {
		t.Errorf("Use(AVX512) error %v", err)
	}
	if prev != Portable || f.Active() != Portable {
		t.Errorf("a failed Use changed the family: %v, %v", prev, f.Active())
	}
	if f.Get(AVX512) != nil || f.Get(AVX2) == nil {
		t.Error("Get: wrong tables")
	}
}

func TestString(t *testing.T) {
	for impl, want := range map[Impl]string{Portable: "portable", AVX2: "avx2", AVX512: "avx512", Impl(7): "Impl(7)"} {
		if got := impl.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(impl), got, want)
		}
	}
}
