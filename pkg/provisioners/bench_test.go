package provisioners

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkRender1000 resolves 1000 bindings through the built-in template provisioners as a
// reconcile does once their state exists: match the provisioner, render init, state, outputs
// and manifests, split the outputs. It reports the cost per binding.
func BenchmarkRender1000(b *testing.B) {
	specs, err := BuiltIn()
	if err != nil {
		b.Fatal(err)
	}
	var entries []Entry
	var types []string
	for i, spec := range specs {
		tmpl, err := Compile(spec)
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, Entry{Name: fmt.Sprintf("built-in[%d]", i), Source: SourceBuiltIn, Template: tmpl})
		if spec.Type != "environment" && spec.Type != "service" {
			types = append(types, spec.Type)
		}
	}
	set := NewSet(entries...)

	const bindings = 1000
	data := make([]Data, bindings)
	for i := range data {
		d := sampleData(types[i%len(types)])
		d.Guid = fmt.Sprintf("%08x-2fa1-11d2-883f-0016d3cca427", i)
		d.SourceWorkload = fmt.Sprintf("workload-%d", i)
		d.Id = d.SourceWorkload + ".res"
		r, err := set.Match(d.Type, d.Class, d.Id).Template.Render(d)
		if err != nil {
			b.Fatal(err)
		}
		d.State = r.State
		data[i] = d
	}

	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i := range data {
			d := data[i]
			e := set.Match(d.Type, d.Class, d.Id)
			r, err := e.Template.Render(d)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := SplitOutputs(r.Outputs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bindings), "ns/binding")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*bindings), "allocs/binding")
}
