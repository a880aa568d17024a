module lake-tools-npm

// This stub module keeps tools/npm/node_modules (aws-cdk ships .go template
// files) out of the root module, so `go test ./...` never walks into it.

go 1.26
