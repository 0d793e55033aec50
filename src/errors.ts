import createError from '@fastify/error'

/**
 * Every error the service returns on purpose, in one place: its stable `code`, the text people read and the
 * HTTP status. The error-envelope plugin turns any of these into `{statusCode, code, error, message}`.
 */
export const NoImageError = createError('NO_IMAGE', 'No image provided', 400)
export const InvalidDataUriError = createError(
  'INVALID_DATA_URI',
  'The image must be a data URI of the form data:image/<subtype>;base64,<data>',
  400
)
export const InvalidBase64Error = createError('INVALID_BASE64', 'The data URI does not contain valid base64 data', 400)
export const NotAnImageMediaTypeError = createError(
  'NOT_AN_IMAGE_MEDIA_TYPE',
  'The data URI declares the media type %s; only image/* media types are accepted',
  400
)
export const TooManyFilesError = createError(
  'TOO_MANY_FILES',
  'Send exactly one file, in the multipart field "image"',
  400
)
export const InvalidJsonError = createError('INVALID_JSON', 'The request body is not valid JSON', 400)
export const ValidationError = createError('VALIDATION_ERROR', '%s', 400)
export const UnauthorizedError = createError('UNAUTHORIZED', 'Unauthorized', 401)
export const RouteNotFoundError = createError('ROUTE_NOT_FOUND', 'Route %s:%s not found', 404)
export const ImageTooLargeError = createError(
  'IMAGE_TOO_LARGE',
  'The image is larger than the limit of %d bytes',
  413
)
export const BodyTooLargeError = createError('BODY_TOO_LARGE', 'The request body is larger than the limit of %d bytes', 413)
export const UnsupportedContentTypeError = createError(
  'UNSUPPORTED_CONTENT_TYPE',
  'Content-Type must be one of: %s',
  415
)
export const UnsupportedImageFormatError = createError(
  'UNSUPPORTED_IMAGE_FORMAT',
  'The file is not an image in a supported format (%s)',
  415
)
export const ImageLacksMetadataError = createError('IMAGE_LACKS_METADATA', 'Image lacks metadata', 422)
export const ExtractorBusyError = createError(
  'EXTRACTOR_BUSY',
  'Metadata extraction is at capacity; retry shortly',
  503
)
export const ExtractorUnavailableError = createError(
  'EXTRACTOR_UNAVAILABLE',
  'Metadata extraction is unavailable; retry shortly',
  503
)
export const ExtractionTimeoutError = createError(
  'EXTRACTION_TIMEOUT',
  'Metadata extraction did not finish in time; retry shortly',
  503
)
export const ConversationNotFoundError = createError('CONVERSATION_NOT_FOUND', 'Conversation not found', 404)
export const ConversationStoreUnavailableError = createError(
  'CONVERSATION_STORE_UNAVAILABLE',
  'Conversations are unavailable; retry shortly',
  503
)
export const RateLimitedError = createError(
  'RATE_LIMITED',
  'Too many requests with this API key; retry after the Retry-After delay',
  429
)
export const OverloadedError = createError(
  'OVERLOADED',
  'The service is overloaded; retry after the Retry-After delay',
  503
)
export const NotReadyError = createError('NOT_READY', 'The service is not ready', 503)
export const InternalError = createError('INTERNAL_ERROR', 'Internal Server Error', 500)

/** Response headers an error carries to the client (Retry-After, WWW-Authenticate). */
export interface ErrorWithHeaders extends Error {
  headers?: Record<string, string>
}

export function withHeaders<E extends Error> (error: E, headers: Record<string, string>): E & ErrorWithHeaders {
  return Object.assign(error, { headers })
}

/** Extra members an error adds to the envelope, e.g. what could still be read from an image without metadata. */
export interface ErrorWithDetails extends Error {
  details?: Record<string, unknown>
}

export function withDetails<E extends Error> (error: E, details: Record<string, unknown>): E & ErrorWithDetails {
  return Object.assign(error, { details })
}
