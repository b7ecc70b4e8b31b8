// Package table converts objects to the server-side tables kubectl get prints, from a list of
// columns and a function giving one row's cells. NAME comes first and AGE last on every kind.
package table

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Column is a column between NAME and AGE.
type Column struct {
	// Name is the header, for example "Runtime".
	Name string
	// Type is the OpenAPI type: string, integer, boolean, number or date.
	Type string
	// Description is shown by kubectl explain-like tooling.
	Description string
	// Wide columns appear only with kubectl get -o wide.
	Wide bool
}

// Convertor turns objects of one kind into tables.
type Convertor[T runtime.Object] struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj T) []interface{}
}

var _ rest.TableConvertor = Convertor[runtime.Object]{}

// New returns a convertor with NAME, the given columns, then AGE; cells returns one value per
// given column.
func New[T runtime.Object](columns []Column, cells func(obj T) []interface{}) Convertor[T] {
	defs := []metav1.TableColumnDefinition{{
		Name: "Name", Type: "string", Format: "name",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["name"],
	}}
	for _, c := range columns {
		priority := int32(0)
		if c.Wide {
			priority = 1
		}
		defs = append(defs, metav1.TableColumnDefinition{Name: c.Name, Type: c.Type, Description: c.Description, Priority: priority})
	}
	defs = append(defs, metav1.TableColumnDefinition{
		Name: "Age", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
	})
	return Convertor[T]{columns: defs, cells: cells}
}

// ConvertToTable converts one object or a list. Rows come from the apimachinery helper every
// Kubernetes registry uses, so NAME and AGE read exactly as on built-in kinds.
func (c Convertor[T]) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = c.columns
	}
	var err error
	table.Rows, err = metatable.MetaToTableRow(object, func(obj runtime.Object, _ metav1.Object, name, age string) ([]interface{}, error) {
		typed, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("table: unexpected object type %T", obj)
		}
		cells := append([]interface{}{name}, c.cells(typed)...)
		return append(cells, age), nil
	})
	if err != nil {
		return nil, err
	}
	if meta.IsListType(object) {
		if l, err := meta.ListAccessor(object); err == nil {
			table.ResourceVersion = l.GetResourceVersion()
			table.Continue = l.GetContinue()
			table.RemainingItemCount = l.GetRemainingItemCount()
		}
	} else if m, err := meta.Accessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}

// OrNone renders an empty string as <none>, as kubectl does for unset values.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
