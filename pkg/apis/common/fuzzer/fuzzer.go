// Package fuzzer holds the fuzz functions every Plinth API group's round-trip test shares.
package fuzzer

import (
	"fmt"

	"sigs.k8s.io/randfill"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// RawObject fills a RawObject with a small JSON object: random bytes would not survive
// encoding.
func RawObject(r *common.RawObject, c randfill.Continue) {
	r.Raw = []byte(fmt.Sprintf(`{"%s":{"n":%d,"s":"%s"}}`, alnum(c), c.Int31(), alnum(c)))
}

// alnum returns a short random string that JSON encodes without escapes.
func alnum(c randfill.Continue) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	n := 1 + c.Intn(8)
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[c.Intn(len(letters))]
	}
	return string(b)
}
