#!/usr/bin/env python3
# cmd/tests/remote_sigv4.py -- recomputes AWS Signature Version 4 for the
# requests nginx logged in remote_http.sh, to check the signatures gpucc
# (libcurl's CURLOPT_AWS_SIGV4) sent: an independent implementation from
# AWS's published algorithm, itself checked against AWS's published
# examples first.
#   remote_sigv4.py LOG ACCESS-KEY SECRET REGION
# LOG lines: METHOD URI|AUTHORIZATION|X-AMZ-CONTENT-SHA256|REQUEST-URI|HOST|
# X-AMZ-DATE|MSEC|X-AMZ-SECURITY-TOKEN (nginx's "-" for a missing header).
import calendar
import hashlib
import hmac
import re
import sys
import time

EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def hmac_sha256(key, text):
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signature(secret, date, region, service, method, uri, query, headers, signed, payload_hash,
              amz_date):
    """SigV4's signature (hex) of one request; headers: lowercase name -> value."""
    canonical_headers = "".join("%s:%s\n" % (h, " ".join(headers[h].split())) for h in signed)
    canonical = "\n".join([method, uri, query, canonical_headers, ";".join(signed), payload_hash])
    scope = "%s/%s/%s/aws4_request" % (date, region, service)
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = hmac_sha256(("AWS4" + secret).encode(), date)
    for part in (region, service, "aws4_request"):
        key = hmac_sha256(key, part)
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def self_test():
    """AWS's documented examples: IAM ListUsers (the SigV4 guide's
    walk-through) and S3's GET /test.txt with a Range header."""
    iam = signature("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1", "iam",
                    "GET", "/", "Action=ListUsers&Version=2010-05-08",
                    {"content-type": "application/x-www-form-urlencoded; charset=utf-8",
                     "host": "iam.amazonaws.com", "x-amz-date": "20150830T123600Z"},
                    ["content-type", "host", "x-amz-date"], EMPTY_SHA256, "20150830T123600Z")
    assert iam == "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7", iam
    s3 = signature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1", "s3",
                   "GET", "/test.txt", "",
                   {"host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
                    "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": "20130524T000000Z"},
                   ["host", "range", "x-amz-content-sha256", "x-amz-date"], EMPTY_SHA256,
                   "20130524T000000Z")
    assert s3 == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41", s3


AUTH = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                  r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$")


def check(line, access_key, secret, region):
    request, auth, sha, request_uri, host, amz_date, msec, token = line.split("|")
    method = request.split(" ")[0]
    m = AUTH.match(auth)
    if not m:
        return "not a SigV4 Authorization header: %s" % auth
    key_id, date, _, _, signed_list, sent = m.groups()
    signed = signed_list.split(";")
    headers = {"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": sha,
               "x-amz-security-token": token}
    needs = ["host", "x-amz-date", "x-amz-content-sha256"]
    for needed in needs + (["x-amz-security-token"] if token != "-" else []):
        if needed not in signed:
            return "%s is not signed" % needed
    for h in signed:
        if h not in headers or headers[h] == "-":
            return "signed header %s was not sent (or this test does not log it)" % h
    if signed != sorted(signed):
        return "SignedHeaders are not sorted"
    # The date signed is the request's own, within AWS's 15 minutes of
    # the time nginx received it.
    when = calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
    if amz_date[:8] != date or abs(when - float(msec)) > 900:
        return "x-amz-date %s is not the request's time (%s)" % (amz_date, msec)
    path, _, query = request_uri.partition("?")
    expected = signature(secret, date, region, "s3", method, path, query, headers, signed, sha,
                         amz_date)
    want = "AWS4-HMAC-SHA256 Credential=%s/%s/%s/s3/aws4_request, SignedHeaders=%s, " \
           "Signature=%s" % (access_key, date, region, signed_list, expected)
    if auth != want:
        return "sent %s, expected %s" % (auth, want)
    return None


def main():
    self_test()
    log, access_key, secret, region = sys.argv[1:5]
    checked = 0
    for line in open(log):
        why = check(line.rstrip("\n"), access_key, secret, region)
        if why:
            print("SigV4: %s: %s" % (line.split("|")[0], why))
            sys.exit(1)
        checked += 1
    if checked == 0:
        print("SigV4: no request logged")
        sys.exit(1)
    print("SigV4: %d requests verified" % checked)


main()
