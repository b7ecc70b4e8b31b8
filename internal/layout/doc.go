// Package layout holds the tests that keep the layout's documentation true, so that it can be
// trusted rather than re-read against the code:
//
//   - pkg/README.md says, for each package under pkg/ and internal/, whether plinth-apiserver,
//     plinth-controller, both or neither import it; TestPackageREADME compares that with
//     `go list -deps` of both commands.
//   - docs/map.md says, for each kind of each API group, where its types, validation, storage,
//     admission, controllers, domain code and integration tests live; TestMapCoversEveryKind
//     compares its kinds with those plinth-apiserver's scheme installs, and TestMapPathsExist
//     checks every path and test it names.
//
// The package has no code of its own; `make test-unit` runs its tests.
package layout
