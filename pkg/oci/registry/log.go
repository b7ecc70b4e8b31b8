package registry

import (
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/distribution/distribution/v3/registry/api/errcode"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

var routeOnce sync.Once

// routeLogsToKlog sends what distribution logs into klog, once per process. distribution logs
// through logrus's global logger, at info level for every request it answers and at error
// level for every error response — including the 404s a client's push is made of (a blob
// checked before it is uploaded) — so logged as is, every push would print errors. Here
// client errors and request lines go to klog's verbosity 4, warnings to 2, and only the
// registry's own failures (5xx, storage) are logged as errors. logrus's global logger is
// otherwise unused in plinth-controller; its own output is discarded.
func routeLogsToKlog() {
	routeOnce.Do(func() {
		std := logrus.StandardLogger()
		std.SetOutput(io.Discard)
		std.SetFormatter(discardFormatter{})
		std.SetLevel(logrus.InfoLevel)
		std.AddHook(klogHook{})
	})
}

// discardFormatter formats nothing: the hook has logged the entry already.
type discardFormatter struct{}

// Format implements logrus.Formatter.
func (discardFormatter) Format(*logrus.Entry) ([]byte, error) { return nil, nil }

// klogHook logs logrus entries to klog.
type klogHook struct{}

// Levels implements logrus.Hook.
func (klogHook) Levels() []logrus.Level { return logrus.AllLevels }

// Fire implements logrus.Hook.
func (klogHook) Fire(e *logrus.Entry) error {
	logger := klog.Background().WithName("registry")
	kv := keysAndValues(e.Data)
	switch {
	case clientError(e.Data):
		logger.V(4).Info(e.Message, kv...)
	case e.Level <= logrus.ErrorLevel:
		logger.Error(nil, e.Message, kv...)
	case e.Level == logrus.WarnLevel:
		logger.V(2).Info(e.Message, kv...)
	default:
		logger.V(4).Info(e.Message, kv...)
	}
	return nil
}

// clientError says whether an entry is about a response with a 4xx status: the client asked
// for something that is not there or not allowed, which is the registry working.
func clientError(data logrus.Fields) bool {
	if status, ok := data["http.response.status"].(int); ok {
		return status >= 400 && status < 500
	}
	if code, ok := data["err.code"].(errcode.ErrorCode); ok {
		status := code.Descriptor().HTTPStatusCode
		return status >= 400 && status < 500 && status != http.StatusTooManyRequests
	}
	return false
}

// keysAndValues are an entry's fields in key order, without the Go version distribution adds
// to every line.
func keysAndValues(data logrus.Fields) []any {
	keys := make([]string, 0, len(data))
	for k := range data {
		if k != "go.version" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	kv := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		kv = append(kv, k, data[k])
	}
	return kv
}
