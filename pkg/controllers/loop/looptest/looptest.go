// Package looptest checks, in controllers' unit tests, that a controller waits for every cache
// it reads before it works: each informer's first list is held back in turn, and the controller
// must not count as synced until it is let through.
package looptest

// Controller is what is checked: whether it would let its workers start.
type Controller interface{ HasSynced() bool }
