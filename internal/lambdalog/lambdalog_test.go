package lambdalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/lake-catalog/lake/internal/lambdalog"
)

func TestRequestIDFromContext(t *testing.T) {
	var buf bytes.Buffer
	log := lambdalog.New(&buf).With("fn", "register")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-123"})
	log.InfoContext(ctx, "hello")
	log.InfoContext(context.Background(), "no lambda context")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %s", len(lines), buf.Bytes())
	}
	var first, second map[string]any
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &second); err != nil {
		t.Fatal(err)
	}
	if first["request_id"] != "req-123" || first["fn"] != "register" || first["msg"] != "hello" {
		t.Fatalf("first line = %v", first)
	}
	if _, ok := second["request_id"]; ok {
		t.Fatalf("second line has a request_id without a Lambda context: %v", second)
	}
}
