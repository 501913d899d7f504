"""``--cluster-security FILE``: Dask TLS settings for ``schedlab run --cluster``.

The file (TOML, or YAML with a ``.yaml``/``.yml`` suffix) gives paths, relative to the file:

```toml
tls_ca_file = "ca.pem"          # the certificate authority that signed the cluster's certificates
tls_client_cert = "client.pem"  # this client's certificate
tls_client_key = "client.key"   # its private key (may be inside tls_client_cert)
require_encryption = true       # optional, default true
```

and becomes a :class:`distributed.security.Security`; the scheduler address must then be
``tls://host:port``. Errors are one line naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.errors import SpecError

FIELDS = ("tls_ca_file", "tls_client_cert", "tls_client_key")


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read ({exc.strerror})", file=str(path)) from None
    import tomllib

    import yaml

    try:
        data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(f"not valid {path.suffix[1:] or 'TOML'}: {first}", file=str(path)) from None
    if not isinstance(data, dict):
        raise SpecError("expected a table of tls_* fields", file=str(path))
    return data


def load_security(path: str | Path) -> Any:
    """The Security object of a ``--cluster-security`` file."""
    from distributed.security import Security

    p = Path(path)
    data = _read(p)
    unknown = sorted(set(data) - {*FIELDS, "require_encryption"})
    if unknown:
        raise SpecError(
            f"unknown field (expected {', '.join(FIELDS)}, require_encryption)",
            field=unknown[0],
            file=str(p),
        )
    paths = {}
    for name in FIELDS:
        value = data.get(name)
        if value is None:
            if name == "tls_client_key":
                continue
            raise SpecError("missing required field", field=name, file=str(p))
        if not isinstance(value, str):
            raise SpecError("must be a file path", field=name, file=str(p))
        resolved = (p.parent / value).resolve()
        if not resolved.is_file():
            raise SpecError(f"no such file: {resolved}", field=name, file=str(p))
        paths[name] = str(resolved)
    encrypt = data.get("require_encryption", True)
    if not isinstance(encrypt, bool):
        raise SpecError("must be true or false", field="require_encryption", file=str(p))
    return Security(require_encryption=encrypt, **paths)
