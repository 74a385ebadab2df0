"""The registry's errors: Confluent Schema Registry's error codes and the JSON body it answers with.

Confluent's REST API answers an error with an HTTP status and a body ``{"error_code": N, "message": "..."}``
where ``error_code`` is the HTTP status followed by a two-digit detail (``40401`` = 404, subject not found).
The codes and their meanings below are the ones Confluent documents for its API
(``io.confluent.kafka.schemaregistry.rest.exceptions.Errors``); the messages are ours, in its words' spirit.
"""
from __future__ import annotations


class RestError(Exception):
    """An answer with an HTTP status and Confluent's ``{"error_code", "message"}`` body."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def status(self) -> int:
        """The HTTP status: the error code's first three digits (40401 -> 404, 40901 -> 409)."""
        code = self.error_code
        while code >= 1000:
            code //= 10
        return code

    def body(self) -> dict:
        return {"error_code": self.error_code, "message": self.message}


# 404: something named in the URL does not exist
def subject_not_found(subject: str) -> RestError:
    return RestError(40401, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version) -> RestError:
    return RestError(40402, f"Version {version} not found.")


def schema_not_found(detail: str = "Schema not found") -> RestError:
    return RestError(40403, detail)


def subject_soft_deleted(subject: str) -> RestError:
    return RestError(40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")


def subject_not_soft_deleted(subject: str) -> RestError:
    return RestError(40405, f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RestError:
    return RestError(40406, f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete "
                            "permanently")


def version_not_soft_deleted(subject: str, version: int) -> RestError:
    return RestError(40407, f"Subject '{subject}' Version {version} was not deleted first before being permanently "
                            "deleted")


def subject_compatibility_not_configured(subject: str) -> RestError:
    return RestError(40408, f"Subject '{subject}' does not have subject-level compatibility configured")


# 409: the schema breaks the subject's compatibility rule. Confluent's registry answered error code 409 itself up to
# 8.0.3 / 8.1.1; since 8.0.4, 8.1.2 and 8.2.0 its Errors.INCOMPATIBLE_SCHEMA_ERROR_CODE is 40901, which kafkalab serves
def incompatible_schema(subject: str, details: list[str]) -> RestError:
    return RestError(40901, f"Schema being registered is incompatible with an earlier schema for subject "
                          f"\"{subject}\", details: {details}")


# 422: the request is well-formed JSON but its content is wrong
def invalid_schema(detail: str) -> RestError:
    return RestError(42201, f"Invalid schema: {detail}")


def invalid_version(version: str) -> RestError:
    return RestError(42202, f"The specified version '{version}' is not a valid version id. Allowed values are "
                            "between [1, 2^31-1] and the string \"latest\"")


def invalid_compatibility_level(level) -> RestError:
    return RestError(42203, f"Invalid compatibility level '{level}'. Valid values are none, backward, forward, full, "
                            "backward_transitive, forward_transitive, and full_transitive")


def unprocessable(message: str) -> RestError:
    return RestError(422, message)


# 400, 404, 405 from the HTTP layer itself
def bad_request(message: str) -> RestError:
    return RestError(400, message)


def no_such_resource() -> RestError:
    return RestError(404, "HTTP 404 Not Found")


def method_not_allowed() -> RestError:
    return RestError(405, "HTTP 405 Method Not Allowed")


# 500: the store behind the registry failed
def store_error(detail: str) -> RestError:
    return RestError(50001, f"Error in the backend data store: {detail}")


def operation_timeout(detail: str) -> RestError:
    return RestError(50002, f"Operation timed out: {detail}")
