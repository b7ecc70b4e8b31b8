package render

import (
	"fmt"
	"testing"
)

func TestChartCacheBounds(t *testing.T) {
	c := newChartCache(2, 100)
	key := func(i int) chartKey { return chartKey{"u", "n", fmt.Sprint(i)} }
	c.add(key(1), &cachedChart{size: 10})
	c.add(key(2), &cachedChart{size: 10})
	c.get(key(1)) // 1 is now the most recently used
	c.add(key(3), &cachedChart{size: 10})
	if c.get(key(2)) != nil || c.get(key(1)) == nil || c.get(key(3)) == nil {
		t.Error("the least recently used chart was not the one evicted")
	}
	// Bytes: 85 more than the 20 cached leaves room for one 10-byte chart, the most recently
	// used (3, read last above).
	c.add(key(4), &cachedChart{size: 85})
	if c.len() != 2 || c.get(key(1)) != nil || c.get(key(3)) == nil || c.get(key(4)) == nil {
		t.Errorf("%d charts cached, want 3 and 4", c.len())
	}
	// A chart larger than the whole cache is not kept and evicts nothing.
	c.add(key(5), &cachedChart{size: 200})
	if c.get(key(5)) != nil || c.len() != 2 {
		t.Error("a chart larger than the cache was kept, or evicted others")
	}
	// Re-adding a key replaces it without counting it twice.
	c.add(key(4), &cachedChart{size: 90})
	if c.len() != 2 || c.bytes != 100 {
		t.Errorf("%d charts, %d bytes after replacing, want 2 and 100", c.len(), c.bytes)
	}
	off := newChartCache(0, 100)
	off.add(key(1), &cachedChart{size: 1})
	if off.len() != 0 {
		t.Error("a disabled cache kept a chart")
	}
}
