package preview

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lake-catalog/lake/internal/icebergsync"
	"github.com/lake-catalog/lake/internal/vending"
	"github.com/lake-catalog/lake/pkg/wire"
)

// filesFor builds the Files access reaches: the local folder of a
// file:// location, or the prefix of an s3:// location read by a client
// that holds the vended credentials and nothing else.
func filesFor(access wire.Credentials, cfg aws.Config, pathStyle bool) (icebergsync.Files, error) {
	switch access.Access {
	case wire.AccessPath:
		return icebergsync.NewLocalFiles(strings.TrimPrefix(access.Location, "file://")), nil
	case wire.AccessVended:
		loc, err := vending.ParseLocation(access.Location)
		if err != nil {
			return nil, err
		}
		client := s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.Credentials = credentials.NewStaticCredentialsProvider(access.AccessKeyID, access.SecretAccessKey, access.SessionToken)
			if access.Region != "" {
				o.Region = access.Region
			}
			o.UsePathStyle = pathStyle
		})
		return icebergsync.NewS3Files(client, loc.Bucket, loc.Prefix), nil
	}
	return nil, fmt.Errorf("access %q to %s is not one lake reads files through", access.Access, access.Location)
}
