#!/usr/bin/python3
"""Parses a Prometheus text exposition with the official client's parser (Debian python3-prometheus-client) and
prints {"types": {family: type}, "samples": {"name{k=v,...}": value}} as JSON. Exit 1 on any parse error."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    types, samples = {}, {}
    for fam in text_string_to_metric_families(text):
        if fam.name in types:
            raise SystemExit(f"family {fam.name} announced twice")
        types[fam.name] = fam.type
        for s in fam.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            samples[f"{s.name}{{{labels}}}"] = s.value
    json.dump({"types": types, "samples": samples}, sys.stdout)


if __name__ == "__main__":
    main()
