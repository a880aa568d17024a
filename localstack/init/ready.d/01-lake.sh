#!/bin/bash
# LocalStack ready hook: creates what lake expects (the registrations table,
# hash key pk of type S, and the snapshot bucket). Idempotent.
set -euo pipefail
table="${LAKE_TABLE:-lake-registrations}"
bucket="${LAKE_BUCKET:-lake-snapshots}"
if ! awslocal dynamodb describe-table --table-name "$table" >/dev/null 2>&1; then
  awslocal dynamodb create-table --table-name "$table" \
    --attribute-definitions AttributeName=pk,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH \
    --billing-mode PAY_PER_REQUEST >/dev/null
fi
awslocal s3api head-bucket --bucket "$bucket" >/dev/null 2>&1 || awslocal s3 mb "s3://$bucket" >/dev/null
echo "lake: table $table and bucket $bucket are ready"
