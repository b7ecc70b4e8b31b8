package apiserver

import (
	"bytes"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// gates is a copy of the server's feature gates with CBORServingAndStorage set as asked.
func gates(t *testing.T, cbor bool) featuregate.FeatureGate {
	t.Helper()
	g := utilfeature.DefaultFeatureGate.DeepCopy()
	if err := g.SetFromMap(map[string]bool{string(features.CBORServingAndStorage): cbor}); err != nil {
		t.Fatal(err)
	}
	return g
}

func mediaTypes(s runtime.NegotiatedSerializer) map[string]runtime.SerializerInfo {
	out := map[string]runtime.SerializerInfo{}
	for _, info := range s.SupportedMediaTypes() {
		out[info.MediaType] = info
	}
	return out
}

func TestNewSerializerOffersCBOROnlyWithTheGate(t *testing.T) {
	for _, on := range []bool{false, true} {
		offered := mediaTypes(NewSerializer(gates(t, on)))
		if _, ok := offered[runtime.ContentTypeJSON]; !ok {
			t.Errorf("gate %v: JSON is not offered: %v", on, offered)
		}
		if _, ok := offered[runtime.ContentTypeProtobuf]; ok {
			t.Errorf("gate %v: protobuf is offered, but Plinth types have no protobuf encoding", on)
		}
		info, ok := offered[runtime.ContentTypeCBOR]
		if ok != on {
			t.Errorf("gate %v: CBOR offered = %v", on, ok)
		}
		if on && (info.StreamSerializer == nil || info.StreamSerializer.Framer == nil) {
			t.Errorf("CBOR has no stream serializer, so watches could not be cbor-seq")
		}
	}
}

// writeCounter counts the writes an encoder makes.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// A list is encoded to JSON item by item (the generic server's option for built-in groups),
// not marshalled whole into one buffer first.
func TestNewSerializerStreamsJSONLists(t *testing.T) {
	info := mediaTypes(NewSerializer(gates(t, false)))[runtime.ContentTypeJSON]
	list := &v1b1.WorkloadList{
		TypeMeta: metav1.TypeMeta{APIVersion: v1b1.SchemeGroupVersion.String(), Kind: "WorkloadList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "7"},
	}
	for _, name := range []string{"a", "b", "c"} {
		list.Items = append(list.Items, v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}})
	}
	w := &writeCounter{}
	if err := info.Serializer.Encode(list, w); err != nil {
		t.Fatal(err)
	}
	if w.writes < len(list.Items) {
		t.Errorf("the list was written in %d writes, want one per item at least (streamed)", w.writes)
	}
	decoded := &v1b1.WorkloadList{}
	if _, _, err := info.Serializer.Decode(w.Bytes(), nil, decoded); err != nil {
		t.Fatalf("the streamed list does not decode: %v\n%s", err, w.String())
	}
	if len(decoded.Items) != 3 || decoded.Items[2].Name != "c" || decoded.ResourceVersion != "7" {
		t.Errorf("decoded %+v", decoded)
	}
}
