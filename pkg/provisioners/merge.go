package provisioners

// mergePatch applies patch to target as a JSON merge patch (RFC 7386), which is how score-k8s
// applies a shared template's result to the shared state: a null removes the key, a map merges
// into a map key by key, anything else replaces. Neither argument is changed: the result shares
// the values the patch leaves alone with target and is new along every path the patch changes.
func mergePatch(target, patch map[string]interface{}) map[string]interface{} {
	if len(patch) == 0 {
		if target == nil {
			return map[string]interface{}{}
		}
		return target
	}
	out := make(map[string]interface{}, len(target)+len(patch))
	for k, v := range target {
		out[k] = v
	}
	for k, v := range patch {
		switch p := v.(type) {
		case nil:
			delete(out, k)
		case map[string]interface{}:
			// A map over anything but a map replaces it, with its own nulls dropped: merging
			// into an empty map does both.
			t, _ := out[k].(map[string]interface{})
			out[k] = mergePatch(t, p)
		default:
			out[k] = v
		}
	}
	return out
}
