import { ChatContext, ChatLink, ChatReply, ChatRequest, ChatTranscript, TranscriptTurn } from './chat.ts'
import { ErrorResponse } from './error.ts'
import { HealthStatus } from './health.ts'
import {
  Camera,
  ContentCredentials,
  ContentCredentialsSigner,
  Gps,
  HistoryEntry,
  ImageLacksMetadataResponse,
  ImageMetadata,
  MetadataJsonBody,
  MetadataMultipartBody,
  Provenance,
  Resolution
} from './metadata.ts'

/** Schemas with an `$id`, registered once with `addSchema`: referenced by routes, named components in OpenAPI. */
export const sharedSchemas = [
  ErrorResponse,
  HealthStatus,
  Camera,
  Gps,
  Resolution,
  HistoryEntry,
  ContentCredentialsSigner,
  ContentCredentials,
  Provenance,
  ImageMetadata,
  ImageLacksMetadataResponse,
  MetadataJsonBody,
  MetadataMultipartBody,
  ChatContext,
  ChatRequest,
  ChatLink,
  ChatReply,
  TranscriptTurn,
  ChatTranscript
]
