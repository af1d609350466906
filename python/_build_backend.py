"""A PEP 517 build backend for the weft package that needs nothing but the standard library, so that
`pip install ./python` works without a network (setuptools would be fetched into pip's isolated
build environment). It builds a pure-Python wheel of weft/ (and an sdist of this folder)."""

import base64
import hashlib
import os
import tarfile
import zipfile

NAME = "weft"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
METADATA = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: Call compiled weft functions on PyTorch and "
            "NumPy tensors\nLicense: Apache-2.0\nRequires-Python: >=3.9\n" % (NAME, VERSION))
WHEEL = "Wheel-Version: 1.0\nGenerator: weft _build_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    dist_info = "%s-%s.dist-info" % (NAME, VERSION)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        def add(path, data):
            wheel.writestr(path, data)
            records.append(_record_line(path, data))
        package = os.path.join(HERE, NAME)
        for file in sorted(os.listdir(package)):
            if file.endswith(".py"):
                with open(os.path.join(package, file), "rb") as f:
                    add("%s/%s" % (NAME, file), f.read())
        add(dist_info + "/METADATA", METADATA.encode())
        add(dist_info + "/WHEEL", WHEEL.encode())
        records.append(dist_info + "/RECORD,,")
        wheel.writestr(dist_info + "/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for file in ["pyproject.toml", "_build_backend.py"]:
            sdist.add(os.path.join(HERE, file), arcname="%s/%s" % (base, file))
        sdist.add(os.path.join(HERE, NAME), arcname="%s/%s" % (base, NAME),
                  filter=lambda t: None if "__pycache__" in t.name else t)
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        data = METADATA.encode()
        info.size = len(data)
        import io
        sdist.addfile(info, io.BytesIO(data))
    return name
