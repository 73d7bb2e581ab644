"""``s3://BUCKET/PREFIX``: the objects of a bucket under a prefix, in any S3-compatible store.

boto3 finds everything the standard way, so MinIO, moto or Ceph work without ragloom settings: the
endpoint from ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, credentials from ``AWS_ACCESS_KEY_ID``
and ``AWS_SECRET_ACCESS_KEY`` (or ``AWS_SHARED_CREDENTIALS_FILE``, a profile, an instance role), the
region from ``AWS_DEFAULT_REGION``. Listing (``ListObjectsV2``, 1,000 keys a page) gives each
object's ETag and size, so an unchanged object costs no download: only new and changed ones are
fetched, streamed and size-limited; keys of types ragloom does not read are never downloaded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import RemoteRefusedError, RemoteSourceError
from ..ingest.loaders import is_supported
from ..optional import require
from ..stores.sync_state import RemoteItemState
from .base import Connector, Entry, Failed, Fetched, Skipped, TooLarge, Unchanged

#: Bytes read from an object's body at a time.
READ_BYTES = 1 << 20


class S3Connector(Connector):
    kind = "s3"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        boto3 = require("boto3", extra="s3", feature="s3:// sources", package="boto3")
        from botocore.config import Config as BotoConfig

        timeout = self.settings.timeout
        self.client = boto3.session.Session().client("s3", config=BotoConfig(
            connect_timeout=timeout, read_timeout=timeout, retries={"max_attempts": 3, "mode": "standard"}))

    def scan(self, known: Mapping[str, RemoteItemState], cursor: Mapping[str, Any]) -> Iterator[Entry]:
        bucket, prefix = self.spec.location, self.spec.prefix
        for page in self._pages(bucket, prefix):
            for obj in page.get("Contents", ()):
                key = obj["Key"]
                item = f"s3://{bucket}/{key}"
                relative = key[len(prefix):].lstrip("/") if key.startswith(prefix) else key
                if key.endswith("/") or not self.selected(relative):
                    continue
                if not is_supported(key):
                    yield Skipped(item, f"unsupported file type ({key.rsplit('.', 1)[-1] if '.' in key else 'none'})")
                    continue
                version = str(obj.get("ETag", "")).strip('"') + f":{obj.get('Size', 0)}"
                seen = known.get(item)
                if seen is not None and seen.version == version:
                    yield Unchanged(item)
                    continue
                if int(obj.get("Size", 0)) > self.stage.max_item_bytes:
                    yield Skipped(item, f"larger than {self.stage.max_item_bytes / 1e6:g} MB (sources.max_item_mb); "
                                        "not downloaded")
                    continue
                if self.stage.over_budget():
                    yield Failed(item, "not downloaded: this sync reached sources.max_sync_mb; the next sync goes on")
                    continue
                yield self._fetch(bucket, key, item, version, obj)
        self.complete = not self.stage.over_budget()

    def _pages(self, bucket: str, prefix: str) -> Iterator[dict[str, Any]]:
        pages = iter(self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix))
        while True:
            try:
                page = next(pages)  # one request a page of 1,000 keys
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - botocore's errors, said in one line
                raise _listing_error(exc, bucket, prefix) from None
            self.stage.requests += 1
            yield page

    def _fetch(self, bucket: str, key: str, item: str, version: str, obj: Mapping[str, Any]) -> Entry:
        path = self.stage.file_for(key)
        try:
            self.stage.requests += 1
            body = self.client.get_object(Bucket=bucket, Key=key)["Body"]
            try:
                self.stage.write(path, iter(lambda: body.read(READ_BYTES), b""))
            finally:
                body.close()
        except TooLarge as exc:
            return Skipped(item, str(exc))
        except Exception as exc:  # noqa: BLE001 - one object failing must not stop the others
            return Failed(item, f"could not be downloaded ({_one_line(exc)})")
        modified = obj.get("LastModified")
        return Fetched(item, item, version, path, metadata={
            "s3_bucket": bucket, "s3_key": key, "etag": str(obj.get("ETag", "")).strip('"'),
            **({"last_modified": modified.isoformat()} if modified is not None else {}),
        })

    def close(self) -> None:
        self.client.close()


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]


def _listing_error(exc: Exception, bucket: str, prefix: str) -> RemoteSourceError:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "") if hasattr(exc, "response") else ""
    where = f"s3://{bucket}/{prefix}"
    if code in ("NoSuchBucket",):
        return RemoteSourceError(f"{where}: the bucket does not exist at this endpoint; check the bucket name and "
                                 "AWS_ENDPOINT_URL")
    if code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "403"):
        return RemoteRefusedError(f"{where}: the store refused the credentials ({code}); check AWS_ACCESS_KEY_ID and "
                                  "AWS_SECRET_ACCESS_KEY (or the profile) and the bucket's policy")
    name = type(exc).__name__
    if name in ("NoCredentialsError", "PartialCredentialsError"):
        return RemoteRefusedError(f"{where}: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                                  "(or AWS_SHARED_CREDENTIALS_FILE)")
    if name in ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError"):
        return RemoteSourceError(f"{where}: the store is unreachable ({_one_line(exc)}); check AWS_ENDPOINT_URL and "
                                 "the network")
    return RemoteSourceError(f"{where}: cannot list the objects ({_one_line(exc)})")
