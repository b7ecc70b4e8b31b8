package validation

import "testing"

// BenchmarkValidateWorkload is the cost validation adds to every workload write.
func BenchmarkValidateWorkload(b *testing.B) {
	w := validWorkload()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if errs := ValidateWorkload(w); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
