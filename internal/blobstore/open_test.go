package blobstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lake-catalog/lake/internal/blobstore"
)

func TestOpen(t *testing.T) {
	cfg := aws.Config{Region: "us-east-1"}
	opts := blobstore.OpenOptions{AWSConfig: &cfg}
	for _, tc := range []struct {
		uri, wantLocation, wantErr string
	}{
		{uri: "s3://lake-snapshots/snapshots/catalog.lakesnap", wantLocation: "s3://lake-snapshots/snapshots/catalog.lakesnap"},
		{uri: "file:///var/lib/lake/catalog.lakesnap", wantLocation: "/var/lib/lake/catalog.lakesnap"},
		{uri: "/var/lib/lake/catalog.lakesnap", wantLocation: "/var/lib/lake/catalog.lakesnap"},
		{uri: ".lake/catalog.lakesnap", wantLocation: ".lake/catalog.lakesnap"},
		{uri: "", wantErr: "no blob location"},
		{uri: "s3://bucket-only", wantErr: "want s3://bucket/key"},
		{uri: "s3://bucket/", wantErr: "want s3://bucket/key"},
		{uri: "s3:///key", wantErr: "want s3://bucket/key"},
		{uri: "s3://bucket/prefix/", wantErr: "not a prefix"},
		{uri: "gs://bucket/key", wantErr: `unsupported scheme "gs"`},
		{uri: "file://otherhost/path", wantErr: "want file:///absolute/path"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			st, err := blobstore.Open(context.Background(), tc.uri, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Open(%q) = %v, want an error containing %q", tc.uri, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.uri, err)
			}
			if got := st.Location(); got != tc.wantLocation {
				t.Fatalf("Open(%q).Location() = %q, want %q", tc.uri, got, tc.wantLocation)
			}
		})
	}
}
