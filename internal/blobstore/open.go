package blobstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// OpenOptions configures Open.
type OpenOptions struct {
	// S3PathStyle selects path-style S3 addressing, for S3-compatible
	// servers (LAKE_S3_PATH_STYLE=true).
	S3PathStyle bool
	// AWSConfig, when set, configures the S3 client; otherwise Open loads
	// the default configuration (the SDK's environment, AWS_ENDPOINT_URL_S3
	// included).
	AWSConfig *aws.Config
	// MaxBytes bounds the blob size an S3 read accepts; 0 means the S3
	// store's default.
	MaxBytes int64
}

// Open returns the Store for uri, the one place that decides where a blob
// lives:
//
//	s3://bucket/key        an S3 object
//	file:///path/to/blob   a local file
//	/path/to/blob, ./blob  a local file
//
// Anything else (another scheme, an S3 URI without a bucket or key, an
// empty string) is an error naming the forms accepted.
func Open(ctx context.Context, uri string, opts OpenOptions) (Store, error) {
	if uri == "" {
		return nil, errors.New("blobstore: no blob location: want s3://bucket/key or a file path")
	}
	scheme, rest, hasScheme := strings.Cut(uri, "://")
	if !hasScheme {
		return NewFile(uri), nil
	}
	switch scheme {
	case "file":
		u, err := url.Parse(uri)
		if err != nil || u.Path == "" || (u.Host != "" && u.Host != "localhost") {
			return nil, fmt.Errorf("blobstore: %q: want file:///absolute/path", uri)
		}
		return NewFile(u.Path), nil
	case "s3":
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
			return nil, fmt.Errorf("blobstore: %q: want s3://bucket/key (an object key, not a prefix)", uri)
		}
		var cfg aws.Config
		if opts.AWSConfig != nil {
			cfg = *opts.AWSConfig
		} else {
			var err error
			if cfg, err = config.LoadDefaultConfig(ctx); err != nil {
				return nil, fmt.Errorf("blobstore: load AWS config: %w", err)
			}
		}
		client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = opts.S3PathStyle })
		return NewS3(client, bucket, key, opts.MaxBytes)
	default:
		return nil, fmt.Errorf("blobstore: %q: unsupported scheme %q: want s3://bucket/key, file:///path or a path", uri, scheme)
	}
}
