package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// fakeServer serves n Workloads of one collection the way kube-apiserver does for what the
// benchmark asks: lists with limit and continue, watches with and without a resourceVersion,
// and merge patches whose event it sends to the open watch.
func fakeServer(t *testing.T, n int) (*kind, *int) {
	t.Helper()
	lists := 0
	patched := make(chan string, 1)
	items := func(from, to int) string {
		var parts []string
		for i := from; i < to; i++ {
			parts = append(parts, fmt.Sprintf(`{"metadata":{"name":%q}}`, objectName(i)))
		}
		return strings.Join(parts, ",")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/score.dev/v1b1/namespaces/ns/workloads", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("watch") == "1" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			if q.Get("resourceVersion") == "" {
				for i := 0; i < n; i++ {
					fmt.Fprintf(w, `{"type":"ADDED","object":{"metadata":{"name":%q}}}`+"\n", objectName(i))
				}
				return
			}
			// Changes that are not the patch's first (another object; the same object by an
			// earlier update), then the patch's; an event taken for it would come before the
			// patch was sent.
			fmt.Fprintf(w, `{"type":"MODIFIED","object":{"metadata":{"name":"other"}}}`+"\n")
			fmt.Fprintf(w, `{"type":"MODIFIED","object":{"metadata":{"name":"w-00000","annotations":{"bench.plinth.dev/seq":"earlier"}}}}`+"\n")
			w.(http.Flusher).Flush()
			fmt.Fprintf(w, `{"type":"MODIFIED","object":{"metadata":{"name":"w-00000","annotations":{"bench.plinth.dev/seq":%q}}}}`+"\n", <-patched)
			return
		}
		lists++
		limit, _ := strconv.Atoi(q.Get("limit"))
		from, _ := strconv.Atoi(q.Get("continue"))
		to, cont := n, ""
		if limit > 0 && from+limit < n {
			to, cont = from+limit, strconv.Itoa(from+limit)
		}
		fmt.Fprintf(w, `{"kind":"WorkloadList","metadata":{"resourceVersion":"9","continue":%q},"items":[%s]}`, cont, items(from, to))
	})
	mux.HandleFunc("/apis/score.dev/v1b1/namespaces/ns/workloads/w-00000", func(w http.ResponseWriter, r *http.Request) {
		var patch struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPatch || r.Header.Get("Content-Type") != "application/merge-patch+json" || json.Unmarshal(body, &patch) != nil {
			http.Error(w, "not a merge patch", http.StatusBadRequest)
			return
		}
		patched <- patch.Metadata.Annotations[seqAnnotation]
		fmt.Fprint(w, `{}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &kind{label: "Plinth", group: "score.dev", client: srv.Client(), host: srv.URL}, &lists
}

func TestListsCountTheirObjects(t *testing.T) {
	k, lists := fakeServer(t, 1203)
	ctx := context.Background()
	size, rv, _, err := k.listFull(ctx, "ns", 1203)
	if err != nil || rv != "9" || size == 0 {
		t.Errorf("full list: %d bytes, rv %q, %v", size, rv, err)
	}
	if _, _, _, err := k.listFull(ctx, "ns", 1204); err == nil {
		t.Error("a full list short of an object was accepted")
	}
	*lists = 0
	if _, err := k.listPaged(ctx, "ns", 500, 1203); err != nil || *lists != 3 {
		t.Errorf("paged list: %d pages, %v; want 3", *lists, err)
	}
	if _, err := k.listPaged(ctx, "ns", 500, 1000); err == nil {
		t.Error("a paged list with more objects than expected was accepted")
	}
}

func TestWatchUpdateWaitsForItsOwnEvent(t *testing.T) {
	k, _ := fakeServer(t, 3)
	open, event, err := k.watchUpdate(context.Background(), "ns", "9", "ns", objectName(0), 0)
	if err != nil || open <= 0 || event <= 0 {
		t.Errorf("open %s, event %s, %v", open, event, err)
	}
}

func TestWatchInitialCountsTheAddedEvents(t *testing.T) {
	k, _ := fakeServer(t, 700)
	if _, err := k.watchInitial(context.Background(), "ns", 700); err != nil {
		t.Error(err)
	}
	if _, err := k.watchInitial(context.Background(), "ns", 701); err == nil || !strings.Contains(err.Error(), "700 of 701") {
		t.Errorf("a watch that ends before the last ADDED: %v", err)
	}
}

func TestDoRefusesAnUnexpectedStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"kind":"Status","message":"forbidden"}`, http.StatusForbidden)
	}))
	defer srv.Close()
	k := &kind{group: "score.dev", client: srv.Client(), host: srv.URL}
	if err := k.create(context.Background(), "ns", "w-00000"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("create answered 403: %v", err)
	}
	if _, err := k.watch(context.Background(), "ns", ""); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("watch answered 403: %v", err)
	}
}
