package initializer

import (
	"errors"
	"testing"

	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/fake"
	informers "github.com/plinth-dev/plinth/pkg/generated/informers/externalversions"
)

type wantsEverything struct {
	*admission.Handler
	factory informers.SharedInformerFactory
	quota   quota.Configuration
}

func (w *wantsEverything) SetPlinthInformerFactory(f informers.SharedInformerFactory) { w.factory = f }
func (w *wantsEverything) SetQuotaConfiguration(c quota.Configuration)                { w.quota = c }
func (w *wantsEverything) ValidateInitialization() error {
	if w.factory == nil || w.quota == nil {
		return errors.New("not initialized")
	}
	return nil
}

func TestInitializers(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	c := generic.NewConfiguration(nil, nil)
	plugin := &wantsEverything{Handler: admission.NewHandler(admission.Create)}
	New(f).Initialize(plugin)
	if plugin.factory != f || plugin.quota != nil {
		t.Fatalf("New gave factory %v, quota %v", plugin.factory, plugin.quota)
	}
	NewQuota(c).Initialize(plugin)
	if plugin.quota != c {
		t.Errorf("NewQuota gave %v", plugin.quota)
	}
	if err := plugin.ValidateInitialization(); err != nil {
		t.Error(err)
	}
}
