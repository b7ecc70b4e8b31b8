// Package validation holds field checks shared by every Plinth API group. Each returns a
// field.ErrorList whose messages are one neutral sentence.
package validation

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/common"
)

// DNSLabel checks a name that must be an RFC 1123 label (lower case, at most 63 characters).
func DNSLabel(value string, fldPath *field.Path) field.ErrorList {
	return fromMessages(value, utilvalidation.IsDNS1123Label(value), fldPath)
}

// DNSSubdomain checks a name that must be an RFC 1123 subdomain.
func DNSSubdomain(value string, fldPath *field.Path) field.ErrorList {
	return fromMessages(value, utilvalidation.IsDNS1123Subdomain(value), fldPath)
}

// QualifiedName checks a type or class name such as "postgres" or "example.com/queue".
func QualifiedName(value string, fldPath *field.Path) field.ErrorList {
	return fromMessages(value, utilvalidation.IsQualifiedName(value), fldPath)
}

// RequiredDNSLabel is DNSLabel for a required field.
func RequiredDNSLabel(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return DNSLabel(value, fldPath)
}

// UID checks a Kubernetes UID reference (an RFC 4122 UUID).
func UID(value string, fldPath *field.Path) field.ErrorList {
	if _, err := uuid.Parse(value); err != nil {
		return field.ErrorList{field.Invalid(fldPath, value, "must be a valid UID (an RFC 4122 UUID)")}
	}
	return nil
}

// URI checks an absolute URI with a scheme and a host, for example https://web.example.com.
func URI(value string, fldPath *field.Path) field.ErrorList {
	u, err := url.Parse(value)
	if err != nil || u.Scheme == "" || u.Host == "" || strings.ContainsAny(value, " \t\n") {
		return field.ErrorList{field.Invalid(fldPath, value, "must be an absolute URI with a scheme and a host")}
	}
	return nil
}

// Port checks a required port number.
func Port(value int32, fldPath *field.Path) field.ErrorList {
	if value == 0 {
		return field.ErrorList{field.Required(fldPath, "a port number between 1 and 65535 is required")}
	}
	return OptionalPort(value, fldPath)
}

// OptionalPort checks a port number where 0 means unset.
func OptionalPort(value int32, fldPath *field.Path) field.ErrorList {
	if value < 0 || value > 65535 {
		return field.ErrorList{field.Invalid(fldPath, value, "must be between 1 and 65535")}
	}
	return nil
}

// AbsolutePath checks a clean absolute file system path.
func AbsolutePath(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !path.IsAbs(value) {
		return field.ErrorList{field.Invalid(fldPath, value, "must be an absolute path")}
	}
	if path.Clean(value) != value {
		return field.ErrorList{field.Invalid(fldPath, value, "must be a clean path without '..', '//' or a trailing '/'")}
	}
	return nil
}

// Base64 checks standard base64 encoding.
func Base64(value string, fldPath *field.Path) field.ErrorList {
	if _, err := base64.StdEncoding.DecodeString(value); err != nil {
		return field.ErrorList{field.Invalid(fldPath, "<binary>", "must be standard base64")}
	}
	return nil
}

// Object checks that a free-form value, when set, is a JSON object.
func Object(value *common.RawObject, fldPath *field.Path) field.ErrorList {
	if value == nil || len(value.Raw) == 0 {
		return nil
	}
	if !value.IsObject() {
		return field.ErrorList{field.Invalid(fldPath, "<value>", "must be a JSON object")}
	}
	return nil
}

// OneOf checks that exactly one of the named fields is set.
func OneOf(fldPath *field.Path, set map[string]bool) field.ErrorList {
	names := sets.List(sets.KeySet(set))
	var given []string
	for _, name := range names {
		if set[name] {
			given = append(given, name)
		}
	}
	switch len(given) {
	case 1:
		return nil
	case 0:
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("exactly one of %s must be set", strings.Join(names, ", ")))}
	default:
		return field.ErrorList{field.Invalid(fldPath, strings.Join(given, ", "),
			fmt.Sprintf("exactly one of %s must be set, not several", strings.Join(names, ", ")))}
	}
}

// Enum checks that a required value is one of the supported ones.
func Enum[T ~string](value T, fldPath *field.Path, supported ...T) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return OptionalEnum(value, fldPath, supported...)
}

// OptionalEnum is Enum where the empty value is allowed.
func OptionalEnum[T ~string](value T, fldPath *field.Path, supported ...T) field.ErrorList {
	if value == "" {
		return nil
	}
	for _, s := range supported {
		if value == s {
			return nil
		}
	}
	names := make([]string, len(supported))
	for i, s := range supported {
		names[i] = string(s)
	}
	return field.ErrorList{field.NotSupported(fldPath, value, names)}
}

// UniqueStrings checks that a list has no duplicates and that each entry passes check.
func UniqueStrings(values []string, fldPath *field.Path, check func(string, *field.Path) field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, v := range values {
		p := fldPath.Index(i)
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(p, v))
			continue
		}
		seen.Insert(v)
		if check != nil {
			errs = append(errs, check(v, p)...)
		}
	}
	return errs
}

func fromMessages(value string, msgs []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}
