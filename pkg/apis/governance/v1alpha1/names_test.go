package v1alpha1

import "testing"

func TestNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{InstanceName("team-a", "shop", "redis", 1), "team-a-shop-redis-01"},
		{InstanceName("team-a", "shop", "redis", 123), "team-a-shop-redis-123"},
		{InstanceLabelValue(7), "07"},
		{RevisionName("team-a-shop-redis-01", 3), "team-a-shop-redis-01-r3"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestPlatformLabels(t *testing.T) {
	got := PlatformLabels(map[string]string{LabelSystem: "shop", LabelInstance: "01", LabelTicketID: "t-1", "team": "a"})
	want := map[string]string{LabelManagedBy: ManagedByValue, LabelSystem: "shop", LabelInstance: "01"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("got %v, want %v", got, want)
		}
	}
}
