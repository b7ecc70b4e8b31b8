package validation

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The grammar of an image reference, as github.com/distribution/reference (what Docker,
// containerd and the kubelet's image pullers parse) defines it:
//
//	reference        := name [ ":" tag ] [ "@" digest ]
//	name             := [domain '/'] path-component ['/' path-component]*
//	domain           := host [':' port-number]
//	host             := domain-name | IPv4address | '[' IPv6address ']'
//	path-component   := [a-z0-9]+ (separator [a-z0-9]+)*, separator := [_.] | '__' | '-'+
//	tag              := [\w][\w.-]{0,127}
//	digest           := algorithm ':' hex{32,}
//
// It is written out here rather than imported because the module does not otherwise depend
// on that package; the expressions are the package's own.
var referenceRegexp = func() *regexp.Regexp {
	const (
		alphanumeric      = `[a-z0-9]+`
		separator         = `(?:[._]|__|[-]+)`
		domainComponent   = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domainName        = domainComponent + `(?:\.` + domainComponent + `)*`
		ipv6Address       = `\[(?:[a-fA-F0-9:]+)\]`
		host              = `(?:` + domainName + `|` + ipv6Address + `)`
		domainAndPort     = host + `(?::[0-9]+)?`
		pathComponent     = alphanumeric + `(?:` + separator + alphanumeric + `)*`
		remoteName        = pathComponent + `(?:/` + pathComponent + `)*`
		repositoryPattern = `(?:` + domainAndPort + `/)?` + remoteName
		tagPattern        = `[\w][\w.-]{0,127}`
		digestPattern     = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	)
	return regexp.MustCompile(`^(` + repositoryPattern + `)(?::` + tagPattern + `)?(?:@` + digestPattern + `)?$`)
}()

// maxImageNameLength is the longest repository name a reference may have.
const maxImageNameLength = 255

// validateImage checks a container image reference: required, without whitespace, and a
// reference an image puller can parse (nginx, nginx:1.27, registry.example.com:5000/team/app@sha256:…).
func validateImage(image string, fldPath *field.Path) field.ErrorList {
	if image == "" {
		return field.ErrorList{field.Required(fldPath, "every container needs an image")}
	}
	if strings.ContainsAny(image, " \t\r\n") {
		return field.ErrorList{field.Invalid(fldPath, image, "must not contain whitespace")}
	}
	m := referenceRegexp.FindStringSubmatch(image)
	if m == nil {
		return field.ErrorList{field.Invalid(fldPath, image,
			"must be a valid image reference: [registry/]repository[:tag][@digest], the repository in lower case")}
	}
	if len(m[1]) > maxImageNameLength {
		return field.ErrorList{field.Invalid(fldPath, image, "the repository name must be at most 255 characters")}
	}
	return nil
}
