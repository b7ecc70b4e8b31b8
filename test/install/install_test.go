package install

import (
	"fmt"
	"testing"
)

// TestValuesKeepComponentsApart: one map given for two components (the same env for both)
// must not carry what the target adds to one component into the other; plinth-apiserver once
// got the controller's --cluster-probe-interval that way and crashed.
func TestValuesKeepComponentsApart(t *testing.T) {
	tg := &Target{Registry: "localhost:5000", Release: "v1", EtcdTag: "v3.6.6"}
	env := map[string]any{"env": []any{map[string]any{"name": "GOGC", "value": "150"}}}
	v := tg.Values(map[string]any{"apiserver": env, "controller": env})
	apiserver, controller := v["apiserver"].(map[string]any), v["controller"].(map[string]any)
	if _, ok := apiserver["extraArgs"]; ok {
		t.Errorf("plinth-apiserver got the controller's extraArgs: %v", apiserver["extraArgs"])
	}
	if fmt.Sprint(controller["extraArgs"]) != "[--cluster-probe-interval=2s]" || fmt.Sprint(apiserver["env"]) != fmt.Sprint(controller["env"]) {
		t.Errorf("values: %v", v)
	}
	if _, ok := env["nodeSelector"]; ok {
		t.Error("Values wrote into the caller's map")
	}
	if ns := apiserver["nodeSelector"].(map[string]any); ns["kubernetes.io/hostname"] != "plinth-node" {
		t.Errorf("plinth-apiserver's nodeSelector: %v", ns)
	}
}
