package render

import (
	"container/list"
	"sync"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// chartKey identifies a pulled chart: the repository or registry URL, the chart's name and the
// resolved version. A chart version is treated as immutable, as Helm does: once pulled, it is
// not pulled again while it stays in the cache.
type chartKey struct {
	url, name, version string
}

// cachedChart is a pulled chart archive, unpacked into its files: loading a chart from them
// skips the decompression, and every render loads its own chart, which rendering mutates.
type cachedChart struct {
	files []*loader.BufferedFile
	size  int
}

// chartCache keeps the most recently used charts, at most maxEntries of them and at most
// maxBytes of files together.
type chartCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int
	bytes      int
	order      *list.List // of *cacheEntry, most recent first
	entries    map[chartKey]*list.Element
}

type cacheEntry struct {
	key   chartKey
	chart *cachedChart
}

func newChartCache(maxEntries, maxBytes int) *chartCache {
	return &chartCache{
		maxEntries: maxEntries,
		maxBytes:   maxBytes,
		order:      list.New(),
		entries:    map[chartKey]*list.Element{},
	}
}

// get returns the cached chart for key, or nil.
func (c *chartCache) get(key chartKey) *cachedChart {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).chart
}

// add caches a chart, evicting the least recently used ones over the bounds. A chart larger
// than the whole cache is not kept.
func (c *chartCache) add(key chartKey, ch *cachedChart) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.maxEntries <= 0 || ch.size > c.maxBytes {
		return
	}
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, chart: ch})
	c.bytes += ch.size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

func (c *chartCache) remove(el *list.Element) {
	e := c.order.Remove(el).(*cacheEntry)
	delete(c.entries, e.key)
	c.bytes -= e.chart.size
}

// len is the number of cached charts.
func (c *chartCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
