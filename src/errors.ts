import { format } from 'node:util'

/**
 * The one family of failures the service reports on purpose: each has a stable `code` and the text people read. The
 * domain throws them (the chat's own are in src/chat/errors.ts); which HTTP status and headers each code gets is the
 * wire's business, decided in one table (plugins/error-envelope.ts). Nothing here knows HTTP.
 */
export type ErrorCode =
  | 'NO_IMAGE'
  | 'INVALID_DATA_URI'
  | 'INVALID_BASE64'
  | 'NOT_AN_IMAGE_MEDIA_TYPE'
  | 'TOO_MANY_FILES'
  | 'TOO_MANY_FIELDS'
  | 'MALFORMED_MULTIPART'
  | 'INVALID_JSON'
  | 'FORBIDDEN_KEY'
  | 'VALIDATION_ERROR'
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'ROUTE_NOT_FOUND'
  | 'CONVERSATION_NOT_FOUND'
  | 'CONVERSATION_BUSY'
  | 'REQUEST_TIMEOUT'
  | 'IMAGE_TOO_LARGE'
  | 'BODY_TOO_LARGE'
  | 'FIELD_TOO_LARGE'
  | 'UNSUPPORTED_CONTENT_TYPE'
  | 'UNSUPPORTED_IMAGE_FORMAT'
  | 'IMAGE_TOO_COMPLEX'
  | 'IMAGE_LACKS_METADATA'
  | 'RATE_LIMITED'
  | 'HEADERS_TOO_LARGE'
  | 'INTERNAL_ERROR'
  | 'EXTRACTOR_BUSY'
  | 'EXTRACTOR_UNAVAILABLE'
  | 'EXTRACTION_TIMEOUT'
  | 'CONVERSATION_STORE_UNAVAILABLE'
  | 'OVERLOADED'
  | 'NOT_READY'

/** A failure with a stable code; `details` are extra members of the answer (what could still be read of an image). */
export class ServiceError extends Error {
  readonly code: ErrorCode
  /** What people read: the message, unless the message names what failed for the log (a host, a command). */
  readonly clientMessage: string
  details?: Record<string, unknown>

  constructor (code: ErrorCode, message: string, options?: ErrorOptions & { clientMessage?: string }) {
    super(message, options)
    this.code = code
    this.clientMessage = options?.clientMessage ?? message
  }
}

type ServiceErrorClass = new (...args: Array<string | number>) => ServiceError

/** One error kind: `new ImageTooLargeError(limit)` formats the template with its arguments (util.format's %s, %d). */
export function kind (code: ErrorCode, template: string): ServiceErrorClass {
  const errorClass = class extends ServiceError {
    constructor (...args: Array<string | number>) {
      super(code, format(template, ...args))
    }
  }
  Object.defineProperty(errorClass, 'name', { value: `ServiceError(${code})` })
  return errorClass
}

export const NoImageError = kind('NO_IMAGE', 'No image provided')
export const InvalidDataUriError = kind('INVALID_DATA_URI', 'The image must be a data URI of the form data:image/<subtype>;base64,<data>')
export const InvalidBase64Error = kind('INVALID_BASE64', 'The data URI does not contain valid base64 data')
export const NotAnImageMediaTypeError = kind('NOT_AN_IMAGE_MEDIA_TYPE', 'The data URI declares the media type %s; only image/* media types are accepted')
export const TooManyFilesError = kind('TOO_MANY_FILES', 'Send exactly one file, in the multipart field "image"')
export const TooManyFieldsError = kind('TOO_MANY_FIELDS', 'The multipart body has too many parts; send the file "image" and at most %d other fields')
export const MalformedMultipartError = kind('MALFORMED_MULTIPART', 'The multipart body is malformed: %s')
export const InvalidJsonError = kind('INVALID_JSON', 'The request body is not valid JSON')
export const ForbiddenKeyError = kind('FORBIDDEN_KEY', 'The request uses the name %s, which is refused: it could change the prototype of every object')
export const ValidationError = kind('VALIDATION_ERROR', '%s')
export const BadRequestError = kind('BAD_REQUEST', '%s')
export const UnauthorizedError = kind('UNAUTHORIZED', 'Unauthorized')
export const KeyInUrlError = kind('UNAUTHORIZED', 'Unauthorized: send the API key in the Authorization header (Authorization: Bearer <key>), never in the URL')
export const RouteNotFoundError = kind('ROUTE_NOT_FOUND', 'Route %s:%s not found')
export const RequestTimeoutError = kind('REQUEST_TIMEOUT', 'The request was not received in time: its headers must arrive within %s seconds, all of it within %s seconds')
export const ImageTooLargeError = kind('IMAGE_TOO_LARGE', 'The image is larger than the limit of %d bytes')
export const BodyTooLargeError = kind('BODY_TOO_LARGE', 'The request body is larger than the limit of %d bytes')
export const FieldTooLargeError = kind('FIELD_TOO_LARGE', 'A multipart text field is longer than the limit of %d bytes')
export const UnsupportedContentTypeError = kind('UNSUPPORTED_CONTENT_TYPE', 'Content-Type must be one of: %s')
export const UnsupportedImageFormatError = kind('UNSUPPORTED_IMAGE_FORMAT', 'The file is not an image in a supported format (%s)')
export const ImageTooComplexError = kind('IMAGE_TOO_COMPLEX', 'The image\'s structure is beyond what the service reads: %s')
export const ImageLacksMetadataError = kind('IMAGE_LACKS_METADATA', 'Image lacks metadata')
export const RateLimitedError = kind('RATE_LIMITED', 'Too many requests with this API key; retry after the Retry-After delay')
export const HeadersTooLargeError = kind('HEADERS_TOO_LARGE', 'The request headers are too large')
export const InternalError = kind('INTERNAL_ERROR', 'Internal Server Error')
export const ExtractorBusyError = kind('EXTRACTOR_BUSY', 'Metadata extraction is at capacity; retry shortly')
export const ExtractorUnavailableError = kind('EXTRACTOR_UNAVAILABLE', 'Metadata extraction is unavailable; retry shortly')
export const ExtractionTimeoutError = kind('EXTRACTION_TIMEOUT', 'Metadata extraction did not finish in time; retry shortly')
export const OverloadedError = kind('OVERLOADED', 'The service is overloaded; retry after the Retry-After delay')
export const NotReadyError = kind('NOT_READY', 'The service is not ready')

export function withDetails<E extends ServiceError> (error: E, details: Record<string, unknown>): E {
  error.details = details
  return error
}

export function withCause<E extends ServiceError> (error: E, cause: unknown): E {
  return Object.assign(error, { cause })
}
