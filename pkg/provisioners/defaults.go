package provisioners

import (
	_ "embed"
	"fmt"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
)

// builtInFile is Plinth's built-in template provisioners, a provisioners file like any other.
//
//go:embed defaults/default.provisioners.yaml
var builtInFile []byte

// BuiltIn returns Plinth's built-in template provisioners: the default resource types Score
// users expect (postgres-instance, mongodb, amqp, mssql, s3, kafka-topic, elasticsearch,
// environment, service) that plinth-controller does not provision in Go. Each call parses the
// embedded file afresh, so callers may keep or change what they get.
func BuiltIn() ([]v1b1.ProvisionerSpec, error) {
	specs, skipped, err := ParseFile(builtInFile)
	if err == nil && len(skipped) > 0 {
		err = skipped[0]
	}
	if err != nil {
		return nil, fmt.Errorf("the built-in provisioners do not parse: %w", err)
	}
	return specs, nil
}
