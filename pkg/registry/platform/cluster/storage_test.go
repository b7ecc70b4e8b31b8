package cluster

import (
	"testing"

	"k8s.io/apiserver/pkg/registry/rest"
)

// Clusters are deleted one at a time, each checked for the VMs it hosts: the resource must not
// offer deletecollection, or discovery and kubectl would list a verb the server refuses.
func TestClustersOfferNoCollectionDelete(t *testing.T) {
	var storage rest.Storage = &REST{}
	if _, ok := storage.(rest.CollectionDeleter); ok {
		t.Fatal("clusters serve deletecollection")
	}
	if _, ok := storage.(rest.GracefulDeleter); !ok {
		t.Fatal("clusters cannot be deleted one by one")
	}
}
