package keyring

import (
	"crypto/rand"
	"testing"
)

// A kubeconfig with an embedded CA, client certificate and key is about 5 KiB.
func kubeconfigSized(b *testing.B) []byte {
	data := make([]byte, 5<<10)
	if _, err := rand.Read(data); err != nil {
		b.Fatal(err)
	}
	return data
}

func benchKeyring(b *testing.B) *Keyring {
	key, err := GenerateKey("k1")
	if err != nil {
		b.Fatal(err)
	}
	k, err := New(File{Keys: []FileKey{key}})
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// BenchmarkSeal is what plinth-apiserver spends sealing a kubeconfig on a write.
func BenchmarkSeal(b *testing.B) {
	k, plain, aad := benchKeyring(b), kubeconfigSized(b), []byte("platform.plinth.dev/clusters/east/uid")
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := k.Seal(plain, aad); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen is what plinth-controller spends opening one, once per Cluster generation.
func BenchmarkOpen(b *testing.B) {
	k, plain, aad := benchKeyring(b), kubeconfigSized(b), []byte("platform.plinth.dev/clusters/east/uid")
	id, sealed, err := k.Seal(plain, aad)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Open(id, sealed, aad); err != nil {
			b.Fatal(err)
		}
	}
}
