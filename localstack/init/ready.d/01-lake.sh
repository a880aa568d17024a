#!/bin/bash
# LocalStack ready hook: creates what lake expects (the registrations table,
# hash key pk of type S, with a KEYS_ONLY stream as refresh's trigger, and
# the snapshot bucket). Idempotent: a table made without a stream gets one.
set -euo pipefail
table="${LAKE_TABLE:-lake-registrations}"
bucket="${LAKE_BUCKET:-lake-snapshots}"
stream="StreamEnabled=true,StreamViewType=KEYS_ONLY"
if ! awslocal dynamodb describe-table --table-name "$table" >/dev/null 2>&1; then
  awslocal dynamodb create-table --table-name "$table" \
    --attribute-definitions AttributeName=pk,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH \
    --billing-mode PAY_PER_REQUEST \
    --stream-specification "$stream" >/dev/null
elif [ "$(awslocal dynamodb describe-table --table-name "$table" \
    --query 'Table.StreamSpecification.StreamEnabled' --output text)" != "True" ]; then
  awslocal dynamodb update-table --table-name "$table" --stream-specification "$stream" >/dev/null
fi
awslocal s3api head-bucket --bucket "$bucket" >/dev/null 2>&1 || awslocal s3 mb "s3://$bucket" >/dev/null
echo "lake: table $table (stream $(awslocal dynamodb describe-table --table-name "$table" \
  --query 'Table.LatestStreamArn' --output text)) and bucket $bucket are ready"
